import { z } from 'zod';

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date like 2026-11-30');

/** Filters of the Audit page and its export (plain GET parameters). */
export const auditFilter = z.object({
	action: z
		.string()
		.trim()
		.max(64)
		.regex(/^[a-z_.]*$/, 'an action such as execution.approved')
		.optional(),
	actor: z.string().trim().max(64).optional(),
	/** `rule` matches every `rule:<id>`. */
	route: z.string().trim().max(64).optional(),
	from: day.optional(),
	to: day.optional(),
	q: z.string().trim().max(200).optional()
});
export type AuditFilter = z.infer<typeof auditFilter>;

export type AuditEntry = {
	id: number;
	at: string;
	actorId: string | null;
	actorName: string | null;
	action: string;
	route: string;
	subjectType: string | null;
	subjectId: string | null;
	sessionId: string | null;
	detail: Record<string, unknown>;
};
