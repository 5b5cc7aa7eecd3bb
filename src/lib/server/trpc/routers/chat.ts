import { TRPCError } from '@trpc/server';
import { sendMessageInput, sessionIdInput } from '$lib/schemas/chat';
import { sql } from '$lib/server/db/index';
import { emitEvent } from '$lib/server/db/queries/events';
import { insertMessage, listMessages } from '$lib/server/db/queries/messages';
import { createSession, getSession, listSessions, titleFrom } from '$lib/server/db/queries/sessions';
import { requestStop, requestTurn } from '$lib/server/conversation/turn-queue';
import { approveByTyping } from '$lib/server/executions/decisions';
import { answerQuestion, openQuestionOf } from '$lib/server/db/queries/questions';
import { operatorProcedure, router } from '../t';
import { credential } from '../credential';

export const chatRouter = router({
	/**
	 * Stores the operator's message (queued until its turn runs) and queues a turn; a new
	 * session is created when none is given. Returns at once: the reply streams over SSE.
	 */
	send: operatorProcedure.input(sendMessageInput).mutation(async ({ input, ctx }) => {
		return sql().begin(async (tx) => {
			let sessionId = input.sessionId;
			if (sessionId) {
				if (!(await getSession(tx, sessionId))) throw new TRPCError({ code: 'NOT_FOUND', message: 'That chat session does not exist.' });
			} else sessionId = await createSession(tx, ctx.user.id, titleFrom(input.text));
			const msg = await insertMessage(tx, {
				sessionId,
				role: 'user',
				parts: [{ type: 'text', text: input.text }],
				status: 'queued',
				origin: 'chat'
			});
			// With a question open, the operator's next message is its answer, and only that:
			// it approves nothing, whatever it says. This turn resumes the agent.
			const open = input.sessionId ? await openQuestionOf(tx, sessionId) : null;
			if (open) await answerQuestion(tx, open.id, { answer: input.text, via: 'chat', operatorId: ctx.user.id, token: ctx.apiToken });
			else if (input.sessionId) {
				await approveByTyping(tx, { sessionId, messageId: msg.id, text: input.text, shownIds: input.shownExecutionIds, operatorId: ctx.user.id, credential: credential(ctx) });
			}
			await emitEvent(tx, { sessionId, type: 'message.updated', payload: { messageId: msg.id } });
			await requestTurn(tx, { sessionId, origin: 'chat' });
			return { sessionId, messageId: msg.id };
		});
	}),

	stop: operatorProcedure.input(sessionIdInput).mutation(async ({ input, ctx }) => {
		await sql().begin((tx) => requestStop(tx, input.sessionId, ctx.user.id));
		return { ok: true };
	}),

	/** The sidebar list, refetched when a session event arrives. */
	sessions: operatorProcedure.query(() => listSessions(sql())),

	messages: operatorProcedure.input(sessionIdInput).query(async ({ input }) => {
		const session = await getSession(sql(), input.sessionId);
		if (!session) throw new TRPCError({ code: 'NOT_FOUND', message: 'That chat session does not exist.' });
		return { session, messages: await listMessages(sql(), input.sessionId) };
	})
});
