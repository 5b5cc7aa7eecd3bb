import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';

export type EventInput = {
	sessionId?: string | null;
	type: string;
	payload?: Record<string, unknown>;
};

export type EventRow = {
	id: number;
	sessionId: string | null;
	type: string;
	payload: Record<string, unknown>;
	/** ISO-like text (the app's client leaves timestamps unparsed). */
	createdAt: string;
};

/** Arbitrary constant: the lock that orders event ids by commit. */
const EVENT_ORDER_LOCK = 7_140_202_613;

/**
 * Appends to the event log inside the caller's transaction, so the change and its event commit
 * together; the insert trigger NOTIFYs at commit.
 *
 * Invariant: event ids are handed out in commit order. The transaction-scoped advisory lock is
 * held from the first event until commit, so no later commit can carry a smaller id; readers
 * may therefore resume with `id > last` and never miss a late commit. Emit events last in a
 * transaction to keep the lock short.
 */
export async function emitEvent(tx: TransactionSql, e: EventInput): Promise<number> {
	await tx`select pg_advisory_xact_lock(${EVENT_ORDER_LOCK})`;
	const [row] = await tx<{ id: string }[]>`
		insert into events (session_id, type, payload)
		values (${e.sessionId ?? null}, ${e.type}, ${JSON.stringify(e.payload ?? {})}::text::jsonb)
		returning id`;
	return Number(row.id);
}

/** Emits one event in its own transaction. */
export async function emitEventNow(sql: Sql, e: EventInput): Promise<number> {
	return sql.begin((tx) => emitEvent(tx, e)) as Promise<number>;
}

const columns = (sql: Sql | TransactionSql) =>
	sql`id::float8 as id, session_id as "sessionId", type, payload, created_at as "createdAt"`;

/** Events after `afterId`, oldest first; `sessionId` narrows to one session. */
export async function listEventsAfter(
	sql: Sql,
	afterId: number,
	opts: { sessionId?: string; excludeTypes?: string[]; limit?: number } = {}
): Promise<EventRow[]> {
	const limit = opts.limit ?? 1000;
	return sql<EventRow[]>`
		select ${columns(sql)} from events
		where id > ${afterId}
		${opts.sessionId ? sql`and session_id = ${opts.sessionId}` : sql``}
		${opts.excludeTypes?.length ? sql`and type <> all(${opts.excludeTypes})` : sql``}
		order by id
		limit ${limit}`;
}

export async function latestEventId(sql: Sql): Promise<number> {
	const [row] = await sql<{ id: number }[]>`select coalesce(max(id), 0)::float8 as id from events`;
	return row.id;
}
