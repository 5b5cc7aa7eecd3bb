import { sql } from '../db/index';
import { addSystemNote } from '../conversation/notes';
import { requestTurn } from '../conversation/turn-queue';
import { answerQuestion, questionSession, type AnswerResult } from '../db/queries/questions';
import { requireWrite, sessionAccess, type Viewer } from '../access/sessions';

/**
 * An answer from outside the chat box: the panel in a browser (recorded and audited as `panel`),
 * or the HTTP API (`rest`: the REST endpoint, or tRPC with a token). Closes the question and resumes the agent in
 * the background (a worker job in the session's queue) with the answer injected as a note.
 */
export async function answerFromPanel(
	sessionId: string | undefined,
	questionId: string,
	answer: string,
	operator: Viewer,
	token?: { id: string; name: string } | null,
	route: 'panel' | 'rest' = token ? 'rest' : 'panel'
): Promise<AnswerResult> {
	return sql().begin(async (tx) => {
		// Only in a session the operator may write (access/sessions.ts): another's question is "no such question".
		const inSession = await questionSession(tx, questionId, sessionId);
		if (!inSession || !(await sessionAccess(tx, inSession, operator))) return { ok: false, reason: 'not_found' } as const;
		await requireWrite(tx, inSession, operator);
		const r = await answerQuestion(tx, questionId, { answer, via: route, operatorId: operator.id, sessionId, token });
		if (!r.ok) return r;
		await addSystemNote(tx, r.question.sessionId, 'answer', `The operator answered your question "${r.question.prompt}": ${answer}`, { questionId });
		await requestTurn(tx, { sessionId: r.question.sessionId, origin: 'answer' });
		return r;
	});
}
