import { TRPCError } from '@trpc/server';
import { sendMessageInput, sessionIdInput } from '$lib/schemas/chat';
import { sql } from '$lib/server/db/index';
import { listMessages } from '$lib/server/conversation/messages';
import { getSession, listSessions } from '$lib/server/db/queries/sessions';
import { sendOperatorMessage, stopSession } from '$lib/server/chat/send';
import { operatorProcedure, router } from '../t';
import { credential } from '../credential';

export const chatRouter = router({
	/**
	 * Stores the operator's message (queued until its turn runs) and queues a turn; a new
	 * session is created when none is given. Returns at once: the reply streams over SSE.
	 */
	send: operatorProcedure.input(sendMessageInput).mutation(({ input, ctx }) =>
		sendOperatorMessage({
			sessionId: input.sessionId,
			text: input.text,
			shownExecutionIds: input.shownExecutionIds,
			pursue: input.pursue,
			operatorId: ctx.user.id,
			credential: credential(ctx),
			token: ctx.apiToken ?? null
		})
	),

	stop: operatorProcedure.input(sessionIdInput).mutation(async ({ input, ctx }) => {
		await stopSession(input.sessionId, ctx.user.id);
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
