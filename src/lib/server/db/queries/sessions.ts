import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { TaskState } from '../schema';
import { emitEvent } from './events';

export type SessionSummary = {
	id: string;
	title: string;
	/** ISO 8601 */
	updatedAt: string;
	taskState: string | null;
	openQuestions: number;
	/** The alert hook or schedule that opened it (an investigation, a scheduled run), else null. */
	startedBy: string | null;
	startedByKind: 'alert' | 'schedule' | null;
};

/** The sidebar list: newest first, with the task state and open-question count. */
export async function listSessions(sql: Sql | TransactionSql, limit = 100): Promise<SessionSummary[]> {
	return sql<SessionSummary[]>`
		select s.id, s.title, s.updated_at as "updatedAt", t.state as "taskState",
			(select count(*)::int from session_questions q where q.session_id = s.id and q.status = 'open') as "openQuestions",
			coalesce(h.name, sc.name) as "startedBy",
			case when h.id is not null then 'alert' when sc.id is not null then 'schedule' end as "startedByKind"
		from chat_sessions s left join tasks t on t.session_id = s.id left join alert_hooks h on h.id = s.started_by_hook
			left join schedules sc on sc.id = s.started_by_schedule
		order by s.updated_at desc
		limit ${limit}`;
}

/** A title from the operator's first words. */
export function titleFrom(text: string): string {
	const line = text.replace(/\s+/g, ' ').trim();
	return line.length > 60 ? line.slice(0, 57).trimEnd() + '…' : line || 'New chat';
}

/** Creates a chat session with its task, and announces it. */
export async function createSession(tx: TransactionSql, operatorId: string | null, title: string, opts: { startedByHook?: string; startedBySchedule?: string } = {}): Promise<string> {
	const [row] = await tx<{ id: string }[]>`
		insert into chat_sessions (operator_id, title, started_by_hook, started_by_schedule)
		values (${operatorId}, ${title}, ${opts.startedByHook ?? null}, ${opts.startedBySchedule ?? null}) returning id`;
	await tx`insert into tasks (session_id, goal, state) values (${row.id}, ${title}, 'executing')`;
	await emitEvent(tx, { sessionId: row.id, type: 'session.updated', payload: { created: true } });
	return row.id;
}

/**
 * The chat that holds one API token's MCP requests (its cards' home), created on first use:
 * one per token, owned by the token's operator. Concurrent first calls end with the same row.
 */
export async function ensureMcpSession(tx: TransactionSql, tokenId: string, operatorId: string, tokenName: string): Promise<string> {
	const [found] = await tx<{ id: string }[]>`select id from chat_sessions where mcp_token_id = ${tokenId}`;
	if (found) return found.id;
	const title = `MCP · ${tokenName}`.slice(0, 60);
	const [row] = await tx<{ id: string }[]>`
		insert into chat_sessions (operator_id, title, mcp_token_id) values (${operatorId}, ${title}, ${tokenId})
		on conflict (mcp_token_id) do nothing returning id`;
	if (!row) return (await tx<{ id: string }[]>`select id from chat_sessions where mcp_token_id = ${tokenId}`)[0].id;
	await tx`insert into tasks (session_id, goal, state) values (${row.id}, ${title}, 'executing')`;
	await emitEvent(tx, { sessionId: row.id, type: 'session.updated', payload: { created: true } });
	return row.id;
}

/** Whether a chat holds an MCP client's requests (their results re-invoke no agent: the client reads them). */
export async function isMcpSession(sql: Sql | TransactionSql, id: string): Promise<boolean> {
	const [row] = await sql<{ mcp: boolean }[]>`select mcp_token_id is not null as mcp from chat_sessions where id = ${id}`;
	return row?.mcp ?? false;
}

export async function getSession(sql: Sql | TransactionSql, id: string) {
	const [row] = await sql<{ id: string; title: string; taskState: TaskState | null; createdAt: string }[]>`
		select s.id, s.title, t.state as "taskState", s.created_at as "createdAt"
		from chat_sessions s left join tasks t on t.session_id = s.id where s.id = ${id}`;
	return row ?? null;
}

/** Moves the session's task to a state (no-op when already there) and announces it. */
export async function setTaskState(tx: TransactionSql, sessionId: string, state: TaskState): Promise<void> {
	const rows = await tx`
		update tasks set state = ${state}, updated_at = now()
		where session_id = ${sessionId} and state <> ${state} returning id`;
	if (rows.length) await emitEvent(tx, { sessionId, type: 'session.updated', payload: { taskState: state } });
}

/** What the session's task waits on: its open questions and its executions awaiting approval. */
export async function countWaits(tx: TransactionSql, sessionId: string): Promise<{ questions: number; approvals: number }> {
	const [row] = await tx<{ questions: number; approvals: number }[]>`
		select
			(select count(*)::int from session_questions where session_id = ${sessionId} and status = 'open') as questions,
			(select count(*)::int from executions where requested_by_session = ${sessionId} and status = 'awaiting_approval') as approvals`;
	return row;
}
