// Notifications: what waits (a notice), the outgoing webhooks admins configure in Settings and
// what Settings shows of them. Shared by the tRPC inputs, the delivery task and the browser.
import { z } from 'zod';
import { outsideTextLabel } from '../types/executions';

export const noticeKinds = ['approval', 'question', 'plan', 'plan_end', 'test'] as const;
export type NoticeKind = (typeof noticeKinds)[number];

/** Something that started waiting for a person (or a plan that ended): what a webhook or a browser notification says. */
export interface Notice {
	kind: NoticeKind;
	sessionId: string | null;
	/** The row that waits (execution, question or plan id): a retry checks it still waits. */
	subjectId: string | null;
	title: string;
	text: string;
	/** Where the card is, relative to the app's origin (`/chat/<id>#execution-<id>`). */
	path: string;
	/** ISO 8601: when it started waiting. */
	at: string;
}

const headerName = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;

/** Header lines as an admin types them (`Name: value`, one a line) → a record, or an error naming the line. */
export function parseHeaderLines(text: string): Record<string, string> | { error: string } {
	const out: Record<string, string> = {};
	const lines = text
		.split('\n')
		.map((l) => l.trim())
		.filter(Boolean);
	if (lines.length > 10) return { error: 'headers: at most 10' };
	for (const line of lines) {
		const i = line.indexOf(':');
		const name = i > 0 ? line.slice(0, i).trim() : '';
		const value = i > 0 ? line.slice(i + 1).trim() : '';
		if (!headerName.test(name)) return { error: `headers: "${line.slice(0, 40)}" is not "Name: value"` };
		if (!value || value.length > 1000 || /[\r\n\0]/.test(value)) return { error: `headers: ${name} needs a value (up to 1000 characters)` };
		out[name] = value;
	}
	return out;
}

const webhookUrl = z
	.string()
	.trim()
	.max(2000, 'url: at most 2000 characters')
	.refine((s) => URL.canParse(s) && ['http:', 'https:'].includes(new URL(s).protocol), 'url: an http:// or https:// address');

export const createWebhookInput = z.object({
	name: z.string().trim().min(1, 'name: required').max(80, 'name: at most 80 characters'),
	kind: z.enum(['ntfy', 'json']),
	url: webhookUrl,
	headers: z
		.record(
			z.string().regex(headerName, 'headers: a header name'),
			z
				.string()
				.min(1)
				.max(1000)
				.regex(/^[^\r\n\0]*$/, 'headers: one line per value')
		)
		.default({})
});
export type CreateWebhookInput = z.input<typeof createWebhookInput>;

/**
 * A change to a webhook. The URL and headers are secrets Settings never shows in full: left out,
 * they stay as they are; given, they replace the old ones (`headers: {}` removes them all).
 */
export const updateWebhookInput = z.object({
	id: z.uuid(),
	name: createWebhookInput.shape.name,
	kind: createWebhookInput.shape.kind,
	url: webhookUrl.optional(),
	headers: createWebhookInput.shape.headers.removeDefault().optional()
});
export type UpdateWebhookInput = z.input<typeof updateWebhookInput>;

export const webhookIdInput = z.object({ id: z.uuid() });
export const setWebhookEnabledInput = z.object({ id: z.uuid(), enabled: z.boolean() });

export const publicOriginInput = z.object({
	origin: z
		.string()
		.trim()
		.max(300)
		.refine(
			(s) => s === '' || (URL.canParse(s) && ['http:', 'https:'].includes(new URL(s).protocol) && new URL(s).origin === s.replace(/\/$/, '')),
			'origin: like https://nomos.example.net (no path)'
		)
});

/** One delivery attempt as Settings lists it. */
export interface WebhookDelivery {
	noticeKind: string;
	ok: boolean;
	httpStatus: number | null;
	error: string | null;
	attempt: number;
	final: boolean;
	at: string;
}

/** A webhook as Settings shows it: its URL and headers masked, its last success and failures. */
export interface WebhookView {
	id: string;
	name: string;
	kind: 'ntfy' | 'json';
	maskedUrl: string;
	/** Header names with masked values. */
	maskedHeaders: Record<string, string>;
	enabled: boolean;
	createdAt: string;
	lastOkAt: string | null;
	failures: WebhookDelivery[];
}

/** What a browser notification's click opens: the chat at the card, or Ops for a request without a chat. */
export function noticePath(kind: 'approval' | 'question' | 'plan', sessionId: string | null, subjectId: string): string {
	if (!sessionId) return kind === 'approval' ? `/ops#execution-${subjectId}` : '/ops';
	const anchor = kind === 'approval' ? `execution-${subjectId}` : kind === 'plan' ? `plan-${subjectId}` : `question-${subjectId}`;
	return `/chat/${sessionId}#${anchor}`;
}

const capitalised = (s: string | null) => (s ? `${s.charAt(0).toUpperCase()}${s.slice(1)}.` : null);

/** The words of a notice, the same in a webhook and a browser notification; a request made after reading outside text says so first. */
export const noticeWords = {
	approval: (e: { action: string; target: string; reason?: string; commandPreview?: string; cause?: Parameters<typeof outsideTextLabel>[0] }) => ({
		title: `Approval waiting: ${e.action} on ${e.target}`,
		text: [capitalised(outsideTextLabel(e.cause)), e.reason, e.commandPreview].filter(Boolean).join('\n') || `${e.action} on ${e.target}`
	}),
	question: (q: { prompt: string }) => ({ title: 'Nomos asks you', text: q.prompt }),
	plan: (p: { title: string; steps: unknown[]; cause?: Parameters<typeof outsideTextLabel>[0] }) => ({
		title: `Plan waiting: ${p.title}`,
		text: [capitalised(outsideTextLabel(p.cause)), `${p.steps.length} step${p.steps.length === 1 ? '' : 's'} to approve`].filter(Boolean).join('\n')
	}),
	planEnd: (p: { title: string; status: string; steps: Array<{ executionId: string | null }> }) => {
		const ran = p.steps.filter((s) => s.executionId).length;
		const n = p.steps.length;
		return p.status === 'succeeded'
			? { title: `Plan done: ${p.title}`, text: `all ${n} step${n === 1 ? '' : 's'} succeeded` }
			: { title: `Plan ${p.status === 'failed' ? 'failed' : `stopped (${p.status})`}: ${p.title}`, text: `stopped at step ${ran} of ${n}; ${n - ran} not run` };
	}
};
