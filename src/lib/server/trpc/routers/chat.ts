import { sendMessageInput, sessionIdInput } from '$lib/schemas/chat';
import { sql } from '$lib/server/db/index';
import { listMessages } from '$lib/server/conversation/messages';
import { getSession, listSessions, searchSessions } from '$lib/server/db/queries/sessions';
import {
	archiveSessionInput,
	listSessionsInput,
	pinSessionInput,
	renameSessionInput,
	searchSessionsInput,
	sessionModelInput,
	shareSessionInput
} from '$lib/schemas/sessions';
import { archiveSession, chooseSessionModel, deleteSession, pinSession, renameSession, shareSession } from '$lib/server/sessions/manage';
import { requireRead, requireWrite } from '$lib/server/access/sessions';
import { sendOperatorMessage, stopSession } from '$lib/server/chat/send';
import { operatorProcedure, router } from '../t';
import { credential } from '../credential';

// Every procedure here acts on the caller's own sessions or those shared with them
// (access/sessions.ts): another operator's session answers "no such chat".

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
			viewer: ctx.user,
			credential: credential(ctx),
			token: ctx.apiToken ?? null
		})
	),

	stop: operatorProcedure.input(sessionIdInput).mutation(async ({ input, ctx }) => {
		await requireWrite(sql(), input.sessionId, ctx.user);
		await stopSession(input.sessionId, ctx.user.id);
		return { ok: true };
	}),

	/** The sidebar list (or the archived ones), refetched when a session event arrives. */
	sessions: operatorProcedure.input(listSessionsInput).query(({ input, ctx }) => listSessions(sql(), ctx.user, { archived: input.archived })),

	/** Full-text search over the caller's sessions' messages, tool calls and results (archived included, deleted not). */
	search: operatorProcedure.input(searchSessionsInput).query(({ input, ctx }) => searchSessions(sql(), ctx.user, input.q)),

	rename: operatorProcedure.input(renameSessionInput).mutation(async ({ input, ctx }) => {
		await renameSession(input.sessionId, ctx.user, input.title);
		return { title: input.title };
	}),

	pin: operatorProcedure.input(pinSessionInput).mutation(async ({ input, ctx }) => {
		await pinSession(input.sessionId, ctx.user, input.pinned);
		return { ok: true };
	}),

	archive: operatorProcedure.input(archiveSessionInput).mutation(async ({ input, ctx }) => {
		await archiveSession(input.sessionId, ctx.user, input.archived);
		return { ok: true };
	}),

	/** Shares the session with every operator, read-only or read-write, or stops sharing it (its owner only). */
	share: operatorProcedure.input(shareSessionInput).mutation(async ({ input, ctx }) => {
		await shareSession(input.sessionId, ctx.user, input.shared);
		return { shared: input.shared };
	}),

	/** Refused while a reply, an approval, an execution, a plan or a question is under way in it. */
	delete: operatorProcedure.input(sessionIdInput).mutation(async ({ input, ctx }) => {
		await deleteSession(input.sessionId, ctx.user);
		return { ok: true };
	}),

	setModel: operatorProcedure.input(sessionModelInput).mutation(async ({ input, ctx }) => {
		await chooseSessionModel(input.sessionId, ctx.user, input.model);
		return { ok: true };
	}),

	/** The session and its messages, with what the caller may do in it (`write`, or `read`: shared read-only, an admin's view). */
	messages: operatorProcedure.input(sessionIdInput).query(async ({ input, ctx }) => {
		const access = await requireRead(sql(), input.sessionId, ctx.user);
		const session = (await getSession(sql(), input.sessionId))!;
		return { session, access, messages: await listMessages(sql(), input.sessionId) };
	})
});
