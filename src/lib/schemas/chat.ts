import { z } from 'zod';

export const sendMessageInput = z.object({
	sessionId: z.uuid().optional(),
	text: z.string().trim().min(1, 'Type a message first.').max(20_000, 'That message is too long (20,000 characters at most).')
});

export const sessionIdInput = z.object({ sessionId: z.uuid() });
