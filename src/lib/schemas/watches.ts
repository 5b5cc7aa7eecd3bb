// Alert hooks (watches): what an admin sends to manage them and what Settings shows of them.
import { z } from 'zod';

export const alertHookKinds = ['proxmox', 'alertmanager', 'generic'] as const;

export const createHookInput = z.object({
	name: z.string().trim().min(1, 'name: give the hook a name').max(60, 'name: at most 60 characters'),
	kind: z.enum(alertHookKinds),
	/** Also accept `X-Nomos-Signature` (an HMAC of the body): the secret itself is then kept. */
	signed: z.boolean().default(false)
});
export const hookIdInput = z.object({ id: z.string().uuid() });
/** Minutes to mute for: 0 unmutes; at most a week. */
export const muteHookInput = z.object({
	id: z.string().uuid(),
	minutes: z
		.number()
		.int()
		.min(0)
		.max(7 * 24 * 60)
});
export const muteGroupInput = z.object({
	sessionId: z.string().uuid(),
	minutes: z
		.number()
		.int()
		.min(0)
		.max(7 * 24 * 60)
});

/** A hook as Settings lists it: never its secret (shown once, on creation and rotation). */
export interface HookView {
	id: string;
	name: string;
	kind: (typeof alertHookKinds)[number];
	/** Accepts `X-Nomos-Signature` too (its secret is kept, not only its hash). */
	signed: boolean;
	/** Relative to the app's origin. */
	path: string;
	mutedUntil: string | null;
	lastReceivedAt: string | null;
	openGroups: number;
}

/** What creating or rotating answers: the hook and its secret, this once. */
export interface HookWithSecret extends HookView {
	secret: string;
}
