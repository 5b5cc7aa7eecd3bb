import { desc, eq, sql as dsql } from 'drizzle-orm';
import { db } from '../index';
import { chatSessions, sessionQuestions, tasks } from '../schema';
import type { TransactionSql } from 'postgres';
import type { TaskState } from '../schema';
import { emitEvent } from './events';
export type SessionSummary = {
	id: string;
	title: string;
	updatedAt: string;
	taskState: string | null;
	openQuestions: number;
};

/** The sidebar list: newest first, with the task state and open-question count. */
export async function listSessions(limit = 100): Promise<SessionSummary[]> {
	return db()
		.select({
			id: chatSessions.id,
			title: chatSessions.title,
			updatedAt: dsql<string>`to_char(${chatSessions.updatedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`,
			taskState: tasks.state,
			openQuestions: dsql<number>`(select count(*)::int from ${sessionQuestions} q where q.session_id = ${chatSessions.id} and q.status = 'open')`
		})
		.from(chatSessions)
		.leftJoin(tasks, eq(tasks.sessionId, chatSessions.id))
		.orderBy(desc(chatSessions.updatedAt))
		.limit(limit);
}


/** A title from the operator's first words. */
export function titleFrom(text: string): string {
	const line = text.replace(/\s+/g, ' ').trim();
	return line.length > 60 ? line.slice(0, 57).trimEnd() + '…' : line || 'New chat';
}

/** Creates a chat session with its task, and announces it. */
export async function createSession(tx: TransactionSql, operatorId: string | null, title: string): Promise<string> {
	const [row] = await tx<{ id: string }[]>`
		insert into chat_sessions (operator_id, title) values (${operatorId}, ${title}) returning id`;
	await tx`insert into tasks (session_id, goal, state) values (${row.id}, ${title}, 'executing')`;
	await emitEvent(tx, { sessionId: row.id, type: 'session.updated', payload: { created: true } });
	return row.id;
}

export async function getSession(sql: import('../index').Sql, id: string) {
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
