import type { Sql } from '../index';
import type { TransactionSql } from 'postgres';
import type { MessageOrigin, MessagePart, MessageRow, MessageStatus } from '../../../types/messages';
import { emitEvent } from './events';

export type { MessageRow };

const columns = (sql: Sql | TransactionSql) =>
	sql`id, session_id as "sessionId", seq::float8 as seq, role, parts, status, origin, error, rev, created_at as "createdAt", updated_at as "updatedAt"`;

export async function listMessages(sql: Sql, sessionId: string): Promise<MessageRow[]> {
	return sql<MessageRow[]>`select ${columns(sql)} from messages where session_id = ${sessionId} order by seq`;
}

export async function getMessagesByIds(sql: Sql, ids: string[]): Promise<MessageRow[]> {
	if (ids.length === 0) return [];
	return sql<MessageRow[]>`select ${columns(sql)} from messages where id = any(${ids}::uuid[])`;
}

export async function getMessage(sql: Sql | TransactionSql, id: string): Promise<MessageRow | null> {
	const [row] = await sql<MessageRow[]>`select ${columns(sql)} from messages where id = ${id}`;
	return row ?? null;
}

/** Inserts a message and touches its session; the caller emits `message.updated` (it knows when). */
export async function insertMessage(
	tx: TransactionSql,
	m: { sessionId: string; role: MessageRow['role']; parts: MessagePart[]; status: MessageStatus; origin: MessageOrigin; error?: string | null }
): Promise<MessageRow> {
	const [row] = await tx<MessageRow[]>`
		insert into messages (session_id, role, parts, status, origin, error)
		values (${m.sessionId}, ${m.role}, ${JSON.stringify(m.parts)}::text::jsonb, ${m.status}, ${m.origin}, ${m.error ?? null})
		returning ${columns(tx)}`;
	await tx`update chat_sessions set updated_at = now() where id = ${m.sessionId}`;
	return row;
}

/** Replaces a message's parts/status (bumping rev). Returns null when it does not exist. */
export async function updateMessage(
	tx: TransactionSql,
	id: string,
	m: { parts?: MessagePart[]; status?: MessageStatus; error?: string | null }
): Promise<MessageRow | null> {
	const [row] = await tx<MessageRow[]>`
		update messages set
			parts = coalesce(${m.parts ? JSON.stringify(m.parts) : null}::text::jsonb, parts),
			status = coalesce(${m.status ?? null}, status),
			error = case when ${m.error === undefined} then error else ${m.error ?? null} end,
			rev = rev + 1,
			updated_at = now()
		where id = ${id}
		returning ${columns(tx)}`;
	return row ?? null;
}

/** Keeps a streaming message fresh, so the sweeper does not take its turn for dead. */
export async function touchStreaming(sql: Sql, id: string): Promise<void> {
	await sql`update messages set updated_at = now() where id = ${id} and status = 'streaming'`;
}

/** Marks the session's queued operator messages as taken by a turn and announces them; returns how many. */
export async function claimQueued(tx: TransactionSql, sessionId: string): Promise<number> {
	const rows = await tx<{ id: string }[]>`
		update messages set status = 'complete', rev = rev + 1, updated_at = now()
		where session_id = ${sessionId} and role = 'user' and status = 'queued'
		returning id`;
	for (const r of rows) await emitEvent(tx, { sessionId, type: 'message.updated', payload: { messageId: r.id } });
	return rows.length;
}

/** Turns whose process died mid-stream: marks the message so it does not show thinking dots forever. */
export async function interruptOrphanedTurns(tx: TransactionSql): Promise<number> {
	const note: MessagePart = { type: 'note', kind: 'error', text: 'This turn was interrupted: the process running it stopped. Send your message again to continue.' };
	const orphaned = await tx<{ id: string; sessionId: string }[]>`
		update messages set status = 'error', error = 'interrupted: the process running this turn stopped',
			parts = parts || ${JSON.stringify([note])}::text::jsonb,
			rev = rev + 1, updated_at = now()
		where status = 'streaming' and updated_at < now() - interval '60 seconds'
		returning id, session_id as "sessionId"`;
	for (const m of orphaned) await emitEvent(tx, { sessionId: m.sessionId, type: 'message.updated', payload: { messageId: m.id } });
	return orphaned.length;
}
