import { TRPCError } from '@trpc/server';
import { answerInput } from '$lib/schemas/questions';
import { sessionIdInput } from '$lib/schemas/chat';
import { sql } from '$lib/server/db/index';
import { answerFromPanel } from '$lib/server/questions/answer';
import { listOpenQuestions, listSessionQuestions } from '$lib/server/db/queries/questions';
import { requireRead } from '$lib/server/access/sessions';
import { operatorProcedure, router } from '../t';

export const questionsRouter = router({
	/** Open questions of the sessions the caller's sidebar lists (access/sessions.ts). */
	open: operatorProcedure.query(({ ctx }) => listOpenQuestions(sql(), ctx.user)),
	ofSession: operatorProcedure.input(sessionIdInput).query(async ({ input, ctx }) => {
		await requireRead(sql(), input.sessionId, ctx.user);
		return listSessionQuestions(sql(), input.sessionId);
	}),
	answer: operatorProcedure.input(answerInput).mutation(async ({ input, ctx }) => {
		const r = await answerFromPanel(input.sessionId, input.questionId, input.answer, ctx.user, ctx.apiToken);
		if (!r.ok) {
			throw new TRPCError(
				r.reason === 'not_found' ? { code: 'NOT_FOUND', message: 'No such question.' } : { code: 'CONFLICT', message: 'This question was already answered.' }
			);
		}
		return r.question;
	})
});
