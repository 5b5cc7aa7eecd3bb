import { z } from 'zod';

export const SESSION_TITLE_MAX = 120;

export const sessionTitle = z
	.string()
	.transform((s) => s.replace(/\s+/g, ' ').trim())
	.pipe(z.string().min(1, 'Give the chat a title.').max(SESSION_TITLE_MAX, `A title has ${SESSION_TITLE_MAX} characters at most.`));

export const renameSessionInput = z.object({ sessionId: z.uuid(), title: sessionTitle });
export const pinSessionInput = z.object({ sessionId: z.uuid(), pinned: z.boolean() });
export const archiveSessionInput = z.object({ sessionId: z.uuid(), archived: z.boolean() });
export const sessionModelInput = z.object({ sessionId: z.uuid(), model: z.string().trim().min(1).max(200).nullable() });
export const listSessionsInput = z.object({ archived: z.boolean().default(false) }).default({ archived: false });
export const searchSessionsInput = z.object({ q: z.string().trim().min(1, 'Type something to search for.').max(200, 'Search for 200 characters at most.') });
export const exportFormat = z.enum(['md', 'json']);
/** Sharing a session with every operator: read-only, read-write, or not at all (null). */
export const shareSessionInput = z.object({ sessionId: z.uuid(), shared: z.enum(['read', 'write']).nullable() });
