import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { chatSessions, executions, plans, replayCases, sessionQuestions } from '../schema';
import { emitEvent } from './events';

/** What came of a session's calls that waited on the operator, by their call key (`<message id>/<tool call id>`). */
export type ParkedOutcomes = {
	executions: (Pick<typeof executions.$inferSelect, 'id' | 'action' | 'target' | 'status' | 'steps' | 'error'> & { callKey: string })[];
	plans: (Pick<typeof plans.$inferSelect, 'id' | 'status' | 'error'> & { callKey: string })[];
	questions: (Pick<typeof sessionQuestions.$inferSelect, 'status' | 'answer'> & { callKey: string })[];
};

export async function parkedOutcomes(sql: Sql, sessionId: string): Promise<ParkedOutcomes> {
	const [executions, plans, questions] = await Promise.all([
		sql<ParkedOutcomes['executions']>`
			select call_key as "callKey", id, action, target, status, steps, error from executions
			where requested_by_session = ${sessionId} and call_key is not null order by created_at`,
		sql<ParkedOutcomes['plans']>`select call_key as "callKey", id, status, error from plans where session_id = ${sessionId} and call_key is not null`,
		sql<
			ParkedOutcomes['questions']
		>`select call_key as "callKey", status, answer from session_questions where session_id = ${sessionId} and call_key is not null`
	]);
	return { executions, plans, questions };
}

export type ReplayRow = Pick<typeof chatSessions.$inferSelect, 'id' | 'replayOf' | 'title' | 'replay' | 'createdAt'>;

/** A replay session: a chat session marked `replay_of` the original, with its options and progress. */
export async function insertReplaySession(
	tx: TransactionSql,
	r: { originalId: string | null; operatorId: string | null; title: string; state: unknown }
): Promise<string> {
	const [row] = await tx<{ id: string }[]>`
		insert into chat_sessions (operator_id, title, replay_of, replay)
		values (${r.operatorId}, ${r.title}, ${r.originalId}, ${JSON.stringify(r.state)}::text::jsonb) returning id`;
	await tx`insert into tasks (session_id, goal, state) values (${row.id}, ${r.title}, 'executing')`;
	await emitEvent(tx, { sessionId: row.id, type: 'replay.updated', payload: { replayId: row.id, status: 'queued' } });
	return row.id;
}

export async function getReplay(sql: Sql | TransactionSql, id: string): Promise<ReplayRow | null> {
	const [row] = await sql<ReplayRow[]>`
		select id, replay_of as "replayOf", title, replay, created_at as "createdAt" from chat_sessions where id = ${id} and replay is not null`;
	return row ?? null;
}

/** The replays of one session, newest first. */
export async function listReplaysOf(sql: Sql, originalId: string): Promise<ReplayRow[]> {
	return sql<ReplayRow[]>`
		select id, replay_of as "replayOf", title, replay, created_at as "createdAt" from chat_sessions
		where replay_of = ${originalId} and replay is not null order by created_at desc limit 20`;
}

/** Takes a queued replay to `running`; false when it is not queued (another job has it, or it ended). */
export async function claimReplay(tx: TransactionSql, id: string): Promise<boolean> {
	const rows = await tx`
		update chat_sessions set replay = jsonb_set(replay, '{status}', '"running"') where id = ${id} and replay->>'status' = 'queued' returning id`;
	return rows.length > 0;
}

export async function setReplayState(
	tx: TransactionSql,
	id: string,
	state: { status: string; sent: number; total: number; error?: string | null }
): Promise<void> {
	await tx`update chat_sessions set replay = replay || ${JSON.stringify({ ...state, error: state.error ?? null })}::text::jsonb, updated_at = now() where id = ${id}`;
	await emitEvent(tx, { sessionId: id, type: 'replay.updated', payload: { replayId: id, status: state.status, sent: state.sent, total: state.total } });
}

export type ReplayCaseRow = typeof replayCases.$inferSelect;

export async function insertReplayCase(
	tx: TransactionSql,
	c: { name: string; originalSessionId: string | null; replaySessionId: string; inputs: unknown; expected: unknown }
): Promise<ReplayCaseRow | null> {
	const [row] = await tx<ReplayCaseRow[]>`
		insert into replay_cases (name, original_session_id, replay_session_id, inputs, expected)
		values (${c.name}, ${c.originalSessionId}, ${c.replaySessionId}, ${JSON.stringify(c.inputs)}::text::jsonb, ${JSON.stringify(c.expected)}::text::jsonb)
		on conflict (name) do nothing
		returning id, name, original_session_id as "originalSessionId", replay_session_id as "replaySessionId", inputs, expected, created_at as "createdAt"`;
	return row ?? null;
}

/** A case by its name (or id). */
export async function getReplayCase(sql: Sql, nameOrId: string): Promise<ReplayCaseRow | null> {
	const isId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(nameOrId);
	const [row] = await sql<ReplayCaseRow[]>`
		select id, name, original_session_id as "originalSessionId", replay_session_id as "replaySessionId", inputs, expected, created_at as "createdAt"
		from replay_cases where ${isId ? sql`id = ${nameOrId}` : sql`name = ${nameOrId}`}`;
	return row ?? null;
}

/** The cases saved from the replays of one session. */
export async function listReplayCasesOf(sql: Sql, originalId: string): Promise<{ id: string; name: string; replaySessionId: string | null }[]> {
	return sql`select id, name, replay_session_id as "replaySessionId" from replay_cases where original_session_id = ${originalId} order by created_at`;
}
