import type { TransactionSql } from 'postgres';
import { listedFor, type Viewer } from './sessions';
import type { Sql } from '../index';
import type { RequestCause } from '../../../types/executions';
import type { OpenQuestion, QuestionRow } from '../../../types/questions';
import { recordAudit } from './audit';
import { emitEvent } from './events';
import { setTaskState } from './sessions';
import type { sessionQuestions } from '../schema';
import type { Expect, SameColumns } from '../same-type';

export type { OpenQuestion, QuestionRow };

// QuestionRow and OpenQuestion (src/lib/types, what the browser gets) copy the table's columns: held to them.
type _QuestionRowColumns = Expect<SameColumns<QuestionRow, typeof sessionQuestions.$inferSelect>>;
type _OpenQuestionColumns = Expect<SameColumns<OpenQuestion, typeof sessionQuestions.$inferSelect>>;

const columns = (sql: Sql | TransactionSql) => sql`
	id, session_id as "sessionId", message_id as "messageId", prompt, why, options, context_entities as "contextEntities",
	status, answer, answered_via as "answeredVia", created_at as "createdAt", answered_at as "answeredAt"`;

export async function listSessionQuestions(sql: Sql, sessionId: string): Promise<QuestionRow[]> {
	return sql<QuestionRow[]>`select ${columns(sql)} from session_questions where session_id = ${sessionId} order by created_at`;
}

export async function listOpenQuestions(sql: Sql, viewer: Viewer): Promise<OpenQuestion[]> {
	return sql<OpenQuestion[]>`
		select q.id, q.session_id as "sessionId", q.prompt, q.created_at as "createdAt", s.title
		from session_questions q join chat_sessions s on s.id = q.session_id
		where q.status = 'open' and ${listedFor(sql, viewer)} order by q.created_at`;
}

/** The session of a question (only if it is this session's, when one is given); null: no such question. */
export async function questionSession(tx: TransactionSql, questionId: string, sessionId?: string): Promise<string | null> {
	const [q] = await tx<Pick<QuestionRow, 'sessionId'>[]>`
		select session_id as "sessionId" from session_questions where id = ${questionId} ${sessionId ? tx`and session_id = ${sessionId}` : tx``}`;
	return q?.sessionId ?? null;
}

/** Records a question, moves the task to awaiting_input and announces it. */
export async function raiseQuestion(
	tx: TransactionSql,
	q: { sessionId: string; messageId: string; prompt: string; why?: string; options: string[]; contextEntities: string[]; callKey?: string | null }
): Promise<QuestionRow> {
	// A new question replaces an older one left open in the same session.
	await tx`update session_questions set status = 'cancelled' where session_id = ${q.sessionId} and status = 'open'`;
	const [row] = await tx<QuestionRow[]>`
		insert into session_questions (session_id, message_id, prompt, why, options, context_entities, call_key)
		values (${q.sessionId}, ${q.messageId}, ${q.prompt}, ${q.why ?? null}, ${JSON.stringify(q.options)}::text::jsonb,
			${JSON.stringify(q.contextEntities)}::text::jsonb, (select case when exists (select 1 from session_questions where call_key = ${q.callKey ?? null}) then null else ${q.callKey ?? null}::text end))
		returning ${columns(tx)}`;
	await setTaskState(tx, q.sessionId, 'awaiting_input');
	await emitEvent(tx, { sessionId: q.sessionId, type: 'question.raised', payload: { questionId: row.id, prompt: row.prompt.slice(0, 300) } });
	return row;
}

export type AnswerResult = { ok: true; question: QuestionRow } | { ok: false; reason: 'not_found' | 'closed' };

/**
 * Closes an open question with its answer, recording where it came from (`via`, also the audit's
 * route). One conditional update: of two tabs answering at once exactly one wins; the task
 * returns to executing.
 */
export async function answerQuestion(
	tx: TransactionSql,
	id: string,
	a: { answer: string; via: 'panel' | 'chat' | 'rest'; operatorId: string; sessionId?: string; token?: { id: string; name: string } | null }
): Promise<AnswerResult> {
	// Who answered: the turn the answer resumes carries it (executions/cause.ts).
	const cause: RequestCause = a.token
		? { kind: 'token', operatorId: a.operatorId, tokenId: a.token.id, tokenName: a.token.name }
		: { kind: 'session', operatorId: a.operatorId };
	const [row] = await tx<QuestionRow[]>`
		update session_questions set status = 'answered', answer = ${a.answer}, answered_via = ${a.via},
			answered_by = ${a.operatorId}, answered_at = now(), answer_cause = ${JSON.stringify(cause)}::text::jsonb
		where id = ${id} and status = 'open' ${a.sessionId ? tx`and session_id = ${a.sessionId}` : tx``}
		returning ${columns(tx)}`;
	if (!row) {
		const [exists] = await tx`select 1 from session_questions where id = ${id} ${a.sessionId ? tx`and session_id = ${a.sessionId}` : tx``}`;
		return { ok: false, reason: exists ? 'closed' : 'not_found' };
	}
	await setTaskState(tx, row.sessionId, 'executing');
	await emitEvent(tx, { sessionId: row.sessionId, type: 'question.answered', payload: { questionId: row.id, via: a.via } });
	// What the operator told the agent is on the trail with what it approved.
	await recordAudit(tx, {
		actor: { id: a.operatorId },
		action: 'question.answered',
		route: a.via,
		subjectType: 'question',
		subjectId: row.id,
		sessionId: row.sessionId,
		detail: { prompt: row.prompt, answer: a.answer, ...(a.token ? { token: { id: a.token.id, name: a.token.name } } : {}) }
	});
	return { ok: true, question: row };
}

export async function openQuestionOf(tx: TransactionSql, sessionId: string): Promise<QuestionRow | null> {
	const [row] = await tx<
		QuestionRow[]
	>`select ${columns(tx)} from session_questions where session_id = ${sessionId} and status = 'open' order by created_at desc limit 1`;
	return row ?? null;
}

/** The question a tool call stored (its call key); null: none. */
export async function questionByCallKey(sql: Sql | TransactionSql, key: string): Promise<Pick<QuestionRow, 'id' | 'prompt' | 'status'> | null> {
	const [row] = await sql<Pick<QuestionRow, 'id' | 'prompt' | 'status'>[]>`select id, prompt, status from session_questions where call_key = ${key}`;
	return row ?? null;
}
