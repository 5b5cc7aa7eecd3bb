import { TRPCError } from '@trpc/server';
import { answerInput } from '$lib/schemas/questions';
import { sessionIdInput } from '$lib/schemas/chat';
import { sql } from '$lib/server/db/index';
import { answerFromPanel } from '$lib/server/questions/answer';
import { listOpenQuestions, listSessionQuestions } from '$lib/server/db/queries/questions';
import { operatorProcedure, router } from '../t';

export const questionsRouter = router({
	open: operatorProcedure.query(() => listOpenQuestions(sql())),
	ofSession: operatorProcedure.input(sessionIdInput).query(({ input }) => listSessionQuestions(sql(), input.sessionId)),
	answer: operatorProcedure.input(answerInput).mutation(async ({ input, ctx }) => {
		const r = await answerFromPanel(input.sessionId, input.questionId, input.answer, ctx.user.id, ctx.apiToken);
		if (!r.ok) {
			throw new TRPCError(
				r.reason === 'not_found' ? { code: 'NOT_FOUND', message: 'No such question.' } : { code: 'CONFLICT', message: 'This question was already answered.' }
			);
		}
		return r.question;
	})
});
