import { TRPCError } from '@trpc/server';
import { sendMessageInput, sessionIdInput } from '$lib/schemas/chat';
import { sql } from '$lib/server/db/index';
import { listMessages } from '$lib/server/conversation/messages';
import { getSession, listSessions, searchSessions } from '$lib/server/db/queries/sessions';
import { archiveSessionInput, listSessionsInput, pinSessionInput, renameSessionInput, searchSessionsInput, sessionModelInput } from '$lib/schemas/sessions';
import { archiveSession, chooseSessionModel, deleteSession, pinSession, renameSession } from '$lib/server/sessions/manage';
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

	/** The sidebar list (or the archived ones), refetched when a session event arrives. */
	sessions: operatorProcedure.input(listSessionsInput).query(({ input }) => listSessions(sql(), { archived: input.archived })),

	/** Full-text search over every session's messages, tool calls and results (archived included, deleted not). */
	search: operatorProcedure.input(searchSessionsInput).query(({ input }) => searchSessions(sql(), input.q)),

	rename: operatorProcedure.input(renameSessionInput).mutation(async ({ input }) => {
		await renameSession(input.sessionId, input.title);
		return { title: input.title };
	}),

	pin: operatorProcedure.input(pinSessionInput).mutation(async ({ input }) => {
		await pinSession(input.sessionId, input.pinned);
		return { ok: true };
	}),

	archive: operatorProcedure.input(archiveSessionInput).mutation(async ({ input }) => {
		await archiveSession(input.sessionId, input.archived);
		return { ok: true };
	}),

	/** Refused while a reply, an approval, an execution, a plan or a question is under way in it. */
	delete: operatorProcedure.input(sessionIdInput).mutation(async ({ input, ctx }) => {
		await deleteSession(input.sessionId, { id: ctx.user.id, username: ctx.user.username });
		return { ok: true };
	}),

	setModel: operatorProcedure.input(sessionModelInput).mutation(async ({ input }) => {
		await chooseSessionModel(input.sessionId, input.model);
		return { ok: true };
	}),

	messages: operatorProcedure.input(sessionIdInput).query(async ({ input }) => {
		const session = await getSession(sql(), input.sessionId);
		if (!session || session.deletedAt) throw new TRPCError({ code: 'NOT_FOUND', message: 'That chat session does not exist.' });
		return { session, messages: await listMessages(sql(), input.sessionId) };
	})
});
