import type { Sql } from '../index';
import type { TransactionSql } from 'postgres';
import type { MessageOrigin, MessagePart, MessageStatus } from '../schema';

export type MessageRow = {
	id: string;
	sessionId: string;
	seq: number;
	role: 'user' | 'assistant' | 'system';
	parts: MessagePart[];
	status: MessageStatus;
	origin: MessageOrigin;
	error: string | null;
	rev: number;
	/** ISO-like text (the app's client leaves timestamps unparsed). */
	createdAt: string;
	updatedAt: string;
};

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

/** Inserts a message and its `message.updated` event in one transaction. */
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
