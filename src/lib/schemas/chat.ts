import { z } from 'zod';
import { pursueHypothesis } from './hypotheses';

export const sendMessageInput = z.object({
	sessionId: z.uuid().optional(),
	text: z.string().trim().min(1, 'Type a message first.').max(20_000, 'That message is too long (20,000 characters at most).'),
	/** Pending executions whose cards were on the operator's screen when they sent this; typed assent approves only among these. */
	shownExecutionIds: z.array(z.uuid()).max(50).default([]),
	/** Sent by a hypothesis card's "Pursue this": the message says so in words, and keeps the choice as a `data-pursue` part. */
	pursue: pursueHypothesis.optional()
});

export const sessionIdInput = z.object({ sessionId: z.uuid() });
