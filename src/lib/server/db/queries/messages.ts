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
	m: { id?: string; sessionId: string; role: MessageRow['role']; parts: MessagePart[]; status: MessageStatus; origin: MessageOrigin; error?: string | null; runner?: string | null }
): Promise<MessageRow> {
	const [row] = await tx<MessageRow[]>`
		insert into messages (id, session_id, role, parts, status, origin, error, runner)
		values (coalesce(${m.id ?? null}::uuid, gen_random_uuid()), ${m.sessionId}, ${m.role}, ${JSON.stringify(m.parts)}::text::jsonb, ${m.status}, ${m.origin}, ${m.error ?? null}, ${m.runner ?? null})
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

/** What the operator reads where a reply was handed to another process (a crash, a restart). */
export const RESUMED_NOTE = 'Nomos restarted while writing this reply; it goes on by itself from here.';

/** A turn whose writer is gone and which is to be resumed (see recovery/dead-processes.ts). */
export interface HandedOverReply {
	id: string;
	sessionId: string;
	origin: MessageOrigin;
}

/**
 * Takes streaming replies away from writers that are gone — `runner` names a dead process; or
 * (no runner) nobody touched the row for 60 s — and hands them over: the runner is cleared, a
 * `resumed` note is appended as a last delta (an open text closed first), so every page shows
 * that the reply stopped and will go on. The caller queues the turn that resumes each one, in
 * the same transaction. Rows are locked; a concurrent recovery skips them.
 */
export async function handOverReplies(tx: TransactionSql, from: { runners: string[] } | { ids: string[] } | { unowned: true }): Promise<HandedOverReply[]> {
	const stale = 'runners' in from || 'ids' in from
		? await tx<MessageRow[]>`
			select ${columns(tx)} from messages
			where status = 'streaming' and ${'ids' in from ? tx`id = any(${from.ids}::uuid[])` : tx`runner = any(${from.runners}::uuid[])`}
			for update skip locked`
		: await tx<MessageRow[]>`
			select ${columns(tx)} from messages m
			where status = 'streaming'
			  and ((runner is null and updated_at < now() - interval '60 seconds')
			    or (runner is not null and not exists (select 1 from worker_processes w where w.id = m.runner)))
			for update skip locked`;
	for (const m of await composeStreaming(tx, stale)) {
		const chunks: MessageChunk[] = [];
		const last = m.parts[m.parts.length - 1];
		if (last?.type === 'text' && last.state === 'streaming') chunks.push({ type: 'text-end', id: TEXT_ID });
		chunks.push({ type: 'data-note', data: notePart('resumed', RESUMED_NOTE).data });
		const rev = m.rev + 1;
		await tx`update messages set runner = null, updated_at = now() where id = ${m.id}`;
		const delta: MessageDelta = { messageId: m.id, rev, chunks };
		await emitEvent(tx, { sessionId: m.sessionId, type: 'message.delta', payload: delta });
	}
	return stale.map((m) => ({ id: m.id, sessionId: m.sessionId, origin: m.origin }));
}

/**
 * Ends a streaming reply nobody can finish as an error, as far as its deltas went (an open text
 * ended, running tool calls failed, the note), written whole and announced with a last delta.
 */
export async function closeReply(tx: TransactionSql, m: MessageRow, note: string): Promise<void> {
	const chunks: MessageChunk[] = [];
	const last = m.parts[m.parts.length - 1];
	if (last?.type === 'text' && last.state === 'streaming') chunks.push({ type: 'text-end', id: TEXT_ID });
	for (const p of m.parts) if (isToolPart(p) && isRunning(p)) chunks.push({ type: 'tool-output-error', toolCallId: p.toolCallId, errorText: 'interrupted before it finished' });
	chunks.push({ type: 'data-note', data: notePart('error', note).data });
	const rev = m.rev + 1;
	const parts = await foldChunks(m.parts, chunks).catch(() => [...m.parts, notePart('error', note)]);
	await writeFinalMessage(tx, m.id, { parts, status: 'error', error: note, rev });
	const delta: MessageDelta = { messageId: m.id, rev, chunks, status: 'error', error: note };
	await emitEvent(tx, { sessionId: m.sessionId, type: 'message.delta', payload: delta });
}

/** Whether a message with this id exists (a turn job's reply, by its turn id). */
export async function messageExists(tx: TransactionSql, id: string): Promise<boolean> {
	const [row] = await tx`select 1 from messages where id = ${id}`;
	return Boolean(row);
}

/** Makes this process the writer of a handed-over reply; false when another one already is (or it ended). */
export async function claimHandedOver(sql: Sql, id: string, runner: string | null): Promise<boolean> {
	const rows = await sql`
		update messages set runner = ${runner}, updated_at = now()
		where id = ${id} and status = 'streaming' and runner is null returning id`;
	return rows.length > 0;
}
