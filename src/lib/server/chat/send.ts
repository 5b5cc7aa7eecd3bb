import { sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import { insertMessage } from '../db/queries/messages';
import { answerQuestion, openQuestionOf } from '../db/queries/questions';
import { createSession, getSession, titleFrom } from '../db/queries/sessions';
import { requestStop, requestTurn } from '../conversation/turn-queue';
import type { Credential } from '../executions/authority';
import { approveByTyping } from '../executions/decisions';
import { causeOfCredential } from '../executions/cause';
import { Refusal } from '../refusal';
import { requireWrite, type Viewer } from '../access/sessions';
import { listMessages } from '../conversation/messages';
import { hypothesisSets, pursueText } from '../../messages/hypotheses';
import type { MessagePart, PursueData } from '../../types/messages';

// What an operator's chat message does, in one transaction: it is stored (queued until its turn
// runs) and a turn is queued; with a question open it is that question's answer and nothing
// else, or else it may approve by typing among the cards the operator saw.

/**
 * Stores the operator's message and queues a turn; a new session is created when none is given.
 * Returns at once: the reply streams over SSE. With `pursue`, the message is that choice (see pursuedMessage).
 */
export async function sendOperatorMessage(m: {
	sessionId?: string;
	text: string;
	shownExecutionIds: string[];
	operatorId: string;
	/** Who sends: they must be able to write the session (access/sessions.ts). */
	viewer: Viewer;
	credential: Credential;
	token: { id: string; name: string } | null;
	pursue?: PursueData;
}): Promise<{ sessionId: string; messageId: string }> {
	if (m.sessionId) await requireWrite(sql(), m.sessionId, m.viewer);
	const pursued = m.pursue ? await pursuedMessage(m.sessionId, m.pursue) : null;
	return store({ ...m, ...pursued });
}

/**
 * A "Pursue this" as the operator's message: the words name the hypothesis as presented (whatever
 * the browser sent), and a `data-pursue` part keeps which one. Refused unless the session has it.
 */
async function pursuedMessage(sessionId: string | undefined, pursue: PursueData): Promise<{ text: string; extra: MessagePart[] }> {
	const set = sessionId ? hypothesisSets(await listMessages(sql(), sessionId)).find((s) => s.setId === pursue.setId) : undefined;
	const h = set?.hypotheses.find((x) => x.id === pursue.hypothesisId);
	if (!h) throw new Refusal('NOT_FOUND', 'That hypothesis is not in this chat.');
	return { text: pursueText(h), extra: [{ type: 'data-pursue', data: { setId: pursue.setId, hypothesisId: h.id } }] };
}

function store(m: Parameters<typeof sendOperatorMessage>[0] & { extra?: MessagePart[] }): Promise<{ sessionId: string; messageId: string }> {
	return sql().begin(async (tx) => {
		let sessionId = m.sessionId;
		if (sessionId) {
			if (!(await getSession(tx, sessionId))) throw new Refusal('NOT_FOUND', 'That chat session does not exist.');
			await requireWrite(tx, sessionId, m.viewer);
		} else sessionId = await createSession(tx, m.operatorId, titleFrom(m.text));
		// Who sent it: what the agent asks for in the turns it starts carries it (executions/cause.ts).
		const cause = causeOfCredential(m.credential, { id: m.operatorId });
		const msg = await insertMessage(tx, {
			sessionId,
			role: 'user',
			parts: [{ type: 'text', text: m.text }, ...(m.extra ?? [])],
			status: 'queued',
			origin: 'chat',
			cause
		});
		// With a question open, the operator's next message is its answer, and only that:
		// it approves nothing, whatever it says. This turn resumes the agent.
		const open = m.sessionId ? await openQuestionOf(tx, sessionId) : null;
		if (open) await answerQuestion(tx, open.id, { answer: m.text, via: 'chat', operatorId: m.operatorId, token: m.token });
		else if (m.sessionId && !m.pursue) {
			await approveByTyping(tx, {
				sessionId,
				messageId: msg.id,
				text: m.text,
				shownIds: m.shownExecutionIds,
				operatorId: m.operatorId,
				credential: m.credential
			});
		}
		await emitEvent(tx, { sessionId, type: 'message.updated', payload: { messageId: msg.id } });
		await requestTurn(tx, { sessionId, origin: 'chat' });
		return { sessionId, messageId: msg.id };
	});
}

/** The operator's Stop: the session's running turn is asked to stop (see requestStop). */
export async function stopSession(sessionId: string, operatorId: string): Promise<void> {
	await sql().begin((tx) => requestStop(tx, sessionId, operatorId));
}
