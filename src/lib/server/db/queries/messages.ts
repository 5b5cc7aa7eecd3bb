import type { Sql } from '../index';
import type { TransactionSql } from 'postgres';
import type { RequestCause } from '../../../types/executions';
import type { MessageDelta, MessageOrigin, MessagePart, MessageRow, MessageStatus } from '../../../types/messages';
import { emitEvent } from './events';
import { refreshMessageFacts } from './review-facts';
import type { messages } from '../schema';
import type { Expect, SameColumns } from '../same-type';

export type { MessageRow };

type MessageColumns = typeof messages.$inferSelect;
type MessageId = Pick<MessageColumns, 'id'>;

// MessageRow (src/lib/types, what the browser gets) copies the table's columns: held to them.
type _MessageRowColumns = Expect<SameColumns<MessageRow, MessageColumns>>;

const columns = (sql: Sql | TransactionSql) =>
	sql`id, session_id as "sessionId", seq::float8 as seq, role, parts, status, origin, error, rev, created_at as "createdAt", updated_at as "updatedAt"`;

/** The session's message rows in order, a streaming one as it was last written whole (conversation/messages.ts composes it). */
export async function listMessageRows(sql: Sql, sessionId: string): Promise<MessageRow[]> {
	return sql<MessageRow[]>`select ${columns(sql)} from messages where session_id = ${sessionId} order by seq`;
}

/** The `message.delta` payloads of these streaming messages, in the order they were emitted. */
export async function streamingDeltas(sql: Sql | TransactionSql, streaming: Pick<MessageRow, 'id' | 'sessionId'>[]): Promise<MessageDelta[]> {
	if (streaming.length === 0) return [];
	const rows = await sql<{ payload: MessageDelta }[]>`
		select payload from events
		where session_id = any(${[...new Set(streaming.map((r) => r.sessionId))]}::uuid[])
			and type = 'message.delta' and payload->>'messageId' = any(${streaming.map((r) => r.id)})
		order by id`;
	return rows.map((r) => r.payload);
}

export async function getMessagesByIds(sql: Sql, ids: string[]): Promise<MessageRow[]> {
	if (ids.length === 0) return [];
	return sql<MessageRow[]>`select ${columns(sql)} from messages where id = any(${ids}::uuid[])`;
}

/** One message row, a streaming one as it was last written whole (conversation/messages.ts composes it). */
export async function getMessageRow(sql: Sql | TransactionSql, id: string): Promise<MessageRow | null> {
	const [row] = await sql<MessageRow[]>`select ${columns(sql)} from messages where id = ${id}`;
	return row ?? null;
}

/**
 * Inserts a message (with its review facts) and touches its session; the caller emits
 * `message.updated` (it knows when). Every write of a message's parts or status in this file
 * refreshes its facts in the same transaction (see review-facts.ts).
 */
export async function insertMessage(
	tx: TransactionSql,
	m: {
		id?: string;
		sessionId: string;
		role: MessageRow['role'];
		parts: MessagePart[];
		status: MessageStatus;
		origin: MessageOrigin;
		error?: string | null;
		runner?: string | null;
		/** An operator's message: who sent it (executions/cause.ts). */
		cause?: RequestCause | null;
	}
): Promise<MessageRow> {
	const [row] = await tx<MessageRow[]>`
		insert into messages (id, session_id, role, parts, status, origin, error, runner, cause)
		values (coalesce(${m.id ?? null}::uuid, gen_random_uuid()), ${m.sessionId}, ${m.role}, ${JSON.stringify(m.parts)}::text::jsonb, ${m.status}, ${m.origin}, ${m.error ?? null}, ${m.runner ?? null},
			${m.cause ? JSON.stringify(m.cause) : null}::text::jsonb)
		returning ${columns(tx)}`;
	await tx`update chat_sessions set updated_at = now() where id = ${m.sessionId}`;
	await refreshMessageFacts(tx, [row.id]);
	return row;
}

/**
 * The session's streaming assistant reply (if any) and its latest finished one that requested an
 * execution, as rows (conversation/messages.ts composes them and reads their requests).
 */
export async function latestRequestingReplyRows(tx: TransactionSql, sessionId: string): Promise<MessageRow[]> {
	return tx<MessageRow[]>`
		(select ${columns(tx)} from messages where session_id = ${sessionId} and role = 'assistant' and status = 'streaming')
		union all
		(select ${columns(tx)} from messages
			where session_id = ${sessionId} and role = 'assistant' and status <> 'streaming'
				and parts @> '[{"type":"tool-request_execution","state":"output-available"}]'::jsonb
			order by seq desc limit 1)`;
}

/** The exact message at the end of a turn, at the `rev` of its last delta (emitted in the same transaction). */
export async function writeFinalMessage(
	tx: TransactionSql,
	id: string,
	m: { parts: MessagePart[]; status: MessageStatus; error: string | null; rev: number; sent?: boolean }
): Promise<void> {
	const text = JSON.stringify(m.parts);
	// `sent`: these parts are the ones the model was sent (its turn's writer), kept as written beside them.
	await tx`
		update messages set parts = ${text}::text::jsonb, sent_parts = case when ${m.sent ?? false} then ${text}::text::json else sent_parts end,
			status = ${m.status}, error = ${m.error}, rev = ${m.rev}, updated_at = now()
		where id = ${id}`;
	await refreshMessageFacts(tx, [id]);
}

/**
 * The parts of these replies as their model was sent them (sent_parts: `json`, so object keys
 * come back in the order they were written), by message id; replies without them are left out.
 */
export async function sentPartsOf(sql: Sql, ids: string[]): Promise<Map<string, MessagePart[]>> {
	if (ids.length === 0) return new Map();
	// sent: the json column as its text (JSON.parse keeps the keys in the order written)
	const rows = await sql<(MessageId & { sent: string })[]>`
		select id, sent_parts::text as sent from messages where id = any(${ids}::uuid[]) and sent_parts is not null`;
	return new Map(rows.map((r) => [r.id, JSON.parse(r.sent) as MessagePart[]]));
}

/** Keeps a streaming message fresh, so the sweeper does not take its turn for dead. */
export async function touchStreaming(sql: Sql, id: string): Promise<void> {
	await sql`update messages set updated_at = now() where id = ${id} and status = 'streaming'`;
}

/**
 * Marks the session's queued operator messages as taken by a turn and announces them; returns how
 * many. Each takes a new place (`seq`) at the end of the transcript, in the order they were sent:
 * a continuation or another turn may have written its note and reply after a message was stored
 * and before this claim, and the turn that claims a message must read it last, after those (the
 * model's history, the page and later turns all follow `seq`). The caller inserts its reply next.
 */
export async function claimQueued(tx: TransactionSql, sessionId: string): Promise<number> {
	const rows = await tx<MessageId[]>`
		select id from messages where session_id = ${sessionId} and role = 'user' and status = 'queued' order by seq for update`;
	for (const r of rows) {
		await tx`
			update messages set status = 'complete', seq = nextval(pg_get_serial_sequence('messages', 'seq')), rev = rev + 1, updated_at = now()
			where id = ${r.id}`;
	}
	await refreshMessageFacts(
		tx,
		rows.map((r) => r.id)
	);
	for (const r of rows) await emitEvent(tx, { sessionId, type: 'message.updated', payload: { messageId: r.id } });
	return rows.length;
}

/**
 * Locks the streaming replies whose writer is gone — `runner` names a dead process; or (no
 * runner) nobody touched the row for 60 s — or the given ones, skipping rows another recovery
 * holds (conversation/messages.ts `handOverReplies` hands them over).
 */
export async function lockOrphanedReplies(tx: TransactionSql, from: { runners: string[] } | { ids: string[] } | { unowned: true }): Promise<MessageRow[]> {
	return 'runners' in from || 'ids' in from
		? tx<MessageRow[]>`
			select ${columns(tx)} from messages
			where status = 'streaming' and ${'ids' in from ? tx`id = any(${from.ids}::uuid[])` : tx`runner = any(${from.runners}::uuid[])`}
			for update skip locked`
		: tx<MessageRow[]>`
			select ${columns(tx)} from messages m
			where status = 'streaming'
			  and ((runner is null and updated_at < now() - interval '60 seconds')
			    or (runner is not null and not exists (select 1 from worker_processes w where w.id = m.runner)))
			for update skip locked`;
}

/** Clears a streaming reply's writer, so the next process to claim it (`claimHandedOver`) writes it. */
export async function releaseReply(tx: TransactionSql, id: string): Promise<void> {
	await tx`update messages set runner = null, updated_at = now() where id = ${id}`;
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

/** A note a turn left about the model server cutting its prompt (run-turn.ts, kind 'context'). */
export type ContextCutNote = Pick<MessageColumns, 'sessionId'> & {
	/** When the turn last wrote the message (ISO 8601). */
	at: MessageColumns['updatedAt'];
	text: string;
	data: Record<string, unknown> | null;
};

/** The newest cut-prompt note of any session, or null when no turn has met one. */
export async function latestContextCut(sql: Sql): Promise<ContextCutNote | null> {
	const [row] = await sql<(Omit<ContextCutNote, 'text' | 'data'> & { note: { text?: unknown; data?: unknown } })[]>`
		select m.session_id as "sessionId", m.updated_at as at, p.part->'data' as note
		from messages m, jsonb_array_elements(m.parts) as p(part)
		where m.parts @> ${JSON.stringify([{ type: 'data-note', data: { kind: 'context' } }])}::text::jsonb
			and p.part->>'type' = 'data-note' and p.part->'data'->>'kind' = 'context'
		order by m.updated_at desc
		limit 1`;
	if (!row) return null;
	const data = row.note.data && typeof row.note.data === 'object' ? (row.note.data as Record<string, unknown>) : null;
	return { sessionId: row.sessionId, at: row.at, text: typeof row.note.text === 'string' ? row.note.text : '', data };
}

/**
 * The causes of the operators' inputs before a reply (chat messages, answers to questions), latest
 * first; `fresh`: made since the session's previous reply (executions/cause.ts picks one).
 */
export async function turnInputs(sql: Sql | TransactionSql, sessionId: string, replyId: string): Promise<{ cause: RequestCause; fresh: boolean }[]> {
	return sql<{ cause: RequestCause; fresh: boolean }[]>`
		with reply as (select seq, created_at from messages where id = ${replyId}),
		prev as (select max(m.created_at) as at from messages m, reply where m.session_id = ${sessionId} and m.role = 'assistant' and m.seq < reply.seq),
		inputs as (
			select m.created_at as at, m.cause from messages m, reply
			where m.session_id = ${sessionId} and m.role = 'user' and m.cause is not null and m.seq < reply.seq
			union all
			select q.answered_at, q.answer_cause from session_questions q, reply
			where q.session_id = ${sessionId} and q.answer_cause is not null and q.answered_at <= reply.created_at
		)
		select cause, at > coalesce((select at from prev), '-infinity') as fresh from inputs order by at desc limit 100`;
}
