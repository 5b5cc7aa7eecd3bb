import type { Sql } from '../index';
import type { TransactionSql } from 'postgres';
import type { MessageChunk, MessageDelta, MessageOrigin, MessagePart, MessageRow, MessageStatus } from '../../../types/messages';
import { foldChunks, TEXT_ID } from '../../../messages/fold';
import { isRunning, isToolPart, notePart } from '../../../messages/parts';
import { emitEvent } from './events';
import { refreshMessageFacts } from './review-facts';

export type { MessageRow };

const columns = (sql: Sql | TransactionSql) =>
	sql`id, session_id as "sessionId", seq::float8 as seq, role, parts, status, origin, error, rev, created_at as "createdAt", updated_at as "updatedAt"`;

/** The session's messages in order; a streaming one as far as its deltas go (see `composeStreaming`). */
export async function listMessages(sql: Sql, sessionId: string): Promise<MessageRow[]> {
	return composeStreaming(sql, await sql<MessageRow[]>`select ${columns(sql)} from messages where session_id = ${sessionId} order by seq`);
}

/**
 * A streaming message's row holds what it had when it started (or last was written whole); what
 * came since is in its `message.delta` events. Folds those onto the row, so a page that loads
 * mid-turn gets the message as far as it has gone, with `rev` saying which deltas it contains
 * (later ones reach it over SSE; earlier ones it skips).
 */
export async function composeStreaming(sql: Sql | TransactionSql, rows: MessageRow[]): Promise<MessageRow[]> {
	const streaming = rows.filter((r) => r.status === 'streaming');
	if (streaming.length === 0) return rows;
	const deltas = await sql<{ payload: MessageDelta }[]>`
		select payload from events
		where session_id = any(${[...new Set(streaming.map((r) => r.sessionId))]}::uuid[])
			and type = 'message.delta' and payload->>'messageId' = any(${streaming.map((r) => r.id)})
		order by id`;
	const out: MessageRow[] = [];
	for (const row of rows) {
		if (row.status !== 'streaming') {
			out.push(row);
			continue;
		}
		let m = row;
		for (const { payload: d } of deltas) {
			if (d.messageId !== row.id || d.rev <= m.rev) continue;
			const parts = await foldChunks(m.parts, d.chunks).catch(() => null);
			// A delta that does not fold (never expected): show what did, not an error page.
			if (!parts) break;
			m = { ...m, parts, rev: d.rev, ...(d.status ? { status: d.status, error: d.error ?? null } : {}) };
		}
		out.push(m);
	}
	return out;
}

export async function getMessagesByIds(sql: Sql, ids: string[]): Promise<MessageRow[]> {
	if (ids.length === 0) return [];
	return sql<MessageRow[]>`select ${columns(sql)} from messages where id = any(${ids}::uuid[])`;
}

export async function getMessage(sql: Sql | TransactionSql, id: string): Promise<MessageRow | null> {
	const rows = await sql<MessageRow[]>`select ${columns(sql)} from messages where id = ${id}`;
	const [row] = await composeStreaming(sql, rows);
	return row ?? null;
}

/**
 * Inserts a message (with its review facts) and touches its session; the caller emits
 * `message.updated` (it knows when). Every write of a message's parts or status in this file
 * refreshes its facts in the same transaction (see review-facts.ts).
 */
export async function insertMessage(
	tx: TransactionSql,
	m: { sessionId: string; role: MessageRow['role']; parts: MessagePart[]; status: MessageStatus; origin: MessageOrigin; error?: string | null }
): Promise<MessageRow> {
	const [row] = await tx<MessageRow[]>`
		insert into messages (session_id, role, parts, status, origin, error)
		values (${m.sessionId}, ${m.role}, ${JSON.stringify(m.parts)}::text::jsonb, ${m.status}, ${m.origin}, ${m.error ?? null})
		returning ${columns(tx)}`;
	await tx`update chat_sessions set updated_at = now() where id = ${m.sessionId}`;
	await refreshMessageFacts(tx, [row.id]);
	return row;
}

/**
 * The executions the agent's latest reply that requested any asked for (its latest batch), read
 * from the messages as composed: a reply still streaming counts with what it has sent so far.
 */
export async function latestRequestedExecutionIds(tx: TransactionSql, sessionId: string): Promise<string[]> {
	const rows = await tx<MessageRow[]>`
		(select ${columns(tx)} from messages where session_id = ${sessionId} and role = 'assistant' and status = 'streaming')
		union all
		(select ${columns(tx)} from messages
			where session_id = ${sessionId} and role = 'assistant' and status <> 'streaming'
				and parts @> '[{"type":"tool-request_execution","state":"output-available"}]'::jsonb
			order by seq desc limit 1)`;
	rows.sort((a, b) => b.seq - a.seq);
	for (const m of await composeStreaming(tx, rows)) {
		const ids = m.parts.flatMap((p) => {
			if (p.type !== 'tool-request_execution' || !('output' in p)) return [];
			const id = (p.output as { executionId?: unknown } | undefined)?.executionId;
			return typeof id === 'string' ? [id] : [];
		});
		if (ids.length) return ids;
	}
	return [];
}

/** The exact message at the end of a turn, at the `rev` of its last delta (emitted in the same transaction). */
export async function writeFinalMessage(tx: TransactionSql, id: string, m: { parts: MessagePart[]; status: MessageStatus; error: string | null; rev: number }): Promise<void> {
	await tx`
		update messages set parts = ${JSON.stringify(m.parts)}::text::jsonb, status = ${m.status}, error = ${m.error}, rev = ${m.rev}, updated_at = now()
		where id = ${id}`;
	await refreshMessageFacts(tx, [id]);
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
	await refreshMessageFacts(tx, rows.map((r) => r.id));
	for (const r of rows) await emitEvent(tx, { sessionId, type: 'message.updated', payload: { messageId: r.id } });
	return rows.length;
}

const ORPHAN_NOTE = 'This turn was interrupted: the process running it stopped. Send your message again to continue.';

/**
 * Turns whose process died mid-stream: each message is closed as far as its deltas went (an open
 * text ended, running tool calls failed, a note), written whole and announced with a last delta,
 * so it does not show thinking dots forever and no browser needs a reload to see the end.
 */
export async function interruptOrphanedTurns(tx: TransactionSql): Promise<number> {
	const stale = await tx<MessageRow[]>`
		select ${columns(tx)} from messages
		where status = 'streaming' and updated_at < now() - interval '60 seconds'
		for update skip locked`;
	const error = 'interrupted: the process running this turn stopped';
	for (const m of await composeStreaming(tx, stale)) {
		const chunks: MessageChunk[] = [];
		const last = m.parts[m.parts.length - 1];
		if (last?.type === 'text' && last.state === 'streaming') chunks.push({ type: 'text-end', id: TEXT_ID });
		for (const p of m.parts) if (isToolPart(p) && isRunning(p)) chunks.push({ type: 'tool-output-error', toolCallId: p.toolCallId, errorText: 'interrupted before it finished' });
		chunks.push({ type: 'data-note', data: notePart('error', ORPHAN_NOTE).data });
		const rev = m.rev + 1;
		// Deltas that do not fold (never expected) must not block the sweep: keep the row and add the note.
		const parts = await foldChunks(m.parts, chunks).catch(() => [...m.parts, notePart('error', ORPHAN_NOTE)]);
		await writeFinalMessage(tx, m.id, { parts, status: 'error', error, rev });
		const delta: MessageDelta = { messageId: m.id, rev, chunks, status: 'error', error };
		await emitEvent(tx, { sessionId: m.sessionId, type: 'message.delta', payload: delta });
	}
	return stale.length;
}
