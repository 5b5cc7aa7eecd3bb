import { sql } from '../db/index';
import { addSystemNote } from '../conversation/notes';
import { requestTurn } from '../conversation/turn-queue';
import { answerQuestion, type AnswerResult } from '../db/queries/questions';

/**
 * The panel route: closes the question and resumes the agent in the background (a worker job
 * in the session's queue) with the answer injected as a note.
 */
export async function answerFromPanel(
	sessionId: string | undefined,
	questionId: string,
	answer: string,
	operatorId: string,
	token?: { id: string; name: string } | null
): Promise<AnswerResult> {
	return sql().begin(async (tx) => {
		const r = await answerQuestion(tx, questionId, { answer, via: 'panel', operatorId, sessionId, token });
		if (!r.ok) return r;
		await addSystemNote(tx, r.question.sessionId, 'answer', `The operator answered your question "${r.question.prompt}": ${answer}`, { questionId });
		await requestTurn(tx, { sessionId: r.question.sessionId, origin: 'resume' });
		return r;
	});
}
