import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import type { MessageChunk, MessageDelta, MessageOrigin, MessageRow } from '../../types/messages';
import { foldChunks, TEXT_ID } from '../../messages/fold';
import { isRunning, isToolPart, notePart } from '../../messages/parts';
import { emitEvent } from '../db/queries/events';
import {
	getMessageRow,
	latestRequestingReplyRows,
	listMessageRows,
	lockOrphanedReplies,
	releaseReply,
	streamingDeltas,
	writeFinalMessage
} from '../db/queries/messages';

// Messages as the operator sees them: db/queries/messages.ts reads and writes the rows; here a
// streaming row is composed with its deltas (the same fold the browser runs, lib/messages/fold.ts).

/** The session's messages in order; a streaming one as far as its deltas go (see `composeStreaming`). */
export async function listMessages(sql: Sql, sessionId: string): Promise<MessageRow[]> {
	return composeStreaming(sql, await listMessageRows(sql, sessionId));
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
	const deltas = await streamingDeltas(sql, streaming);
	const out: MessageRow[] = [];
	for (const row of rows) {
		if (row.status !== 'streaming') {
			out.push(row);
			continue;
		}
		let m = row;
		for (const d of deltas) {
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

export async function getMessage(sql: Sql | TransactionSql, id: string): Promise<MessageRow | null> {
	const row = await getMessageRow(sql, id);
	if (!row) return null;
	const [m] = await composeStreaming(sql, [row]);
	return m ?? null;
}

/**
 * The executions the agent's latest reply that requested any asked for (its latest batch), read
 * from the messages as composed: a reply still streaming counts with what it has sent so far.
 */
export async function latestRequestedExecutionIds(tx: TransactionSql, sessionId: string): Promise<string[]> {
	const rows = await latestRequestingReplyRows(tx, sessionId);
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
	const stale = await lockOrphanedReplies(tx, from);
	for (const m of await composeStreaming(tx, stale)) {
		const chunks: MessageChunk[] = [];
		const last = m.parts[m.parts.length - 1];
		if (last?.type === 'text' && last.state === 'streaming') chunks.push({ type: 'text-end', id: TEXT_ID });
		chunks.push({ type: 'data-note', data: notePart('resumed', RESUMED_NOTE).data });
		const rev = m.rev + 1;
		await releaseReply(tx, m.id);
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
	for (const p of m.parts)
		if (isToolPart(p) && isRunning(p)) chunks.push({ type: 'tool-output-error', toolCallId: p.toolCallId, errorText: 'interrupted before it finished' });
	chunks.push({ type: 'data-note', data: notePart('error', note).data });
	const rev = m.rev + 1;
	const parts = await foldChunks(m.parts, chunks).catch(() => [...m.parts, notePart('error', note)]);
	await writeFinalMessage(tx, m.id, { parts, status: 'error', error: note, rev });
	const delta: MessageDelta = { messageId: m.id, rev, chunks, status: 'error', error: note };
	await emitEvent(tx, { sessionId: m.sessionId, type: 'message.delta', payload: delta });
}
