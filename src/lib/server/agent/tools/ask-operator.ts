import { tool } from 'ai';
import { z } from 'zod';
import { sql } from '../../db/index';
import { raiseQuestion } from '../../db/queries/questions';
import { queueNotice, questionNotice } from '../../notify/notices';
import { callKey, type ToolContext } from './context';

export const askOperatorInput = z
	.object({
		prompt: z.string().min(3).max(2000),
		why: z.string().max(1000).optional(),
		options: z.array(z.string().min(1).max(200)).max(8).optional().describe('suggested answers'),
		context_entities: z.array(z.string().max(200)).max(10).optional().describe("refs, e.g. 'host:strong'")
	})
	.strict();

/** ask_operator: a structured question; the turn ends right after it. */
export function askOperatorTool(ctx: ToolContext) {
	return tool({
		description: 'Ask the operator what only they can decide instead of guessing; ends your turn (the answer comes back).',
		inputSchema: askOperatorInput,
		execute: async (input, { toolCallId }) => {
			const q = await sql().begin(async (tx) => {
				const q = await raiseQuestion(tx, {
					sessionId: ctx.sessionId,
					messageId: ctx.messageId,
					prompt: input.prompt,
					why: input.why,
					options: input.options ?? [],
					contextEntities: input.context_entities ?? [],
					callKey: callKey(ctx, toolCallId)
				});
				await queueNotice(tx, questionNotice(q));
				return q;
			});
			return { questionId: q.id, status: 'waiting for the operator', prompt: input.prompt };
		}
	});
}
