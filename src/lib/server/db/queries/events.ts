import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import { parseEventPayload, type EventPayload, type EventType } from '../../../schemas/events';
import type { events } from '../schema';

/** One event to emit: its type names its payload's schema in schemas/events.ts. */
export type EventInput<T extends EventType = EventType> = {
	sessionId?: string | null;
	type: T;
	payload: EventPayload<T>;
};

/** An event as the log holds it (`createdAt`: ISO 8601 text, like every timestamp a query returns; see db/index.ts). */
export type EventRow = typeof events.$inferSelect;

/**
 * Appends to the event log inside the caller's transaction, so the change and its event commit
 * together. The payload is checked against its type's schema first: a wrong one throws (naming
 * the type and field) before anything is written.
 *
 * Invariant: event ids are handed out in commit order, so readers may resume with `id > last` and
 * never miss a late commit. The row is written here with a provisional id nobody else sees; a
 * deferred trigger gives it its final id at commit, under an advisory lock taken after every other
 * lock of the transaction, and NOTIFYs then (drizzle/0041_events_commit_order.sql). An event may
 * therefore be emitted anywhere in a transaction: the order lock is never held while the
 * transaction waits for a row (an answer's event, then its note's session, beside a turn's
 * message, then its event, deadlocked when the lock was taken here).
 */
export async function emitEvent<T extends EventType>(tx: TransactionSql, e: EventInput<T>): Promise<void> {
	parseEventPayload(e.type, e.payload);
	await tx`insert into events (session_id, type, payload) values (${e.sessionId ?? null}, ${e.type}, ${JSON.stringify(e.payload)}::text::jsonb)`;
}

/** Emits one event in its own transaction; returns its (final) id. */
export async function emitEventNow<T extends EventType>(sql: Sql, e: EventInput<T>): Promise<number> {
	return sql.begin<number>(async (tx) => {
		await emitEvent(tx, e);
		// The final id is given by the commit trigger: run it now, then read what it set.
		await tx`set constraints events_commit_order immediate`;
		const [row] = await tx<{ id: string }[]>`select current_setting('nomos.last_event_id') as id`;
		return Number(row.id);
	});
}

const columns = (sql: Sql | TransactionSql) => sql`id::float8 as id, session_id as "sessionId", type, payload, created_at as "createdAt"`;

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

const PRUNED_KEY = 'events.pruned_through';

/** The highest event id pruning has removed (0 when nothing was): a cursor below it has a gap. */
export async function prunedThrough(sql: Sql): Promise<number> {
	const [row] = await sql<{ id: number }[]>`select coalesce((value->>'id')::float8, 0) as id from settings where key = ${PRUNED_KEY}`;
	return row?.id ?? 0;
}

/**
 * Deletes events older than `days`, oldest first, `batch` ids at a time (short transactions,
 * no long lock on the table), and records the highest id removed. Returns how many went.
 */
export async function pruneEvents(sql: Sql, days: number, batch = 5000): Promise<number> {
	let total = 0;
	for (;;) {
		const n = await sql.begin(async (tx) => {
			const [r] = await tx<{ n: number; top: number | null }[]>`
				with doomed as (
					select id from events where created_at < now() - make_interval(days => ${days}) order by id limit ${batch}
				), gone as (
					delete from events where id in (select id from doomed) returning id
				)
				select count(*)::int as n, max(id)::float8 as top from gone`;
			if (r.top !== null) {
				await tx`
					insert into settings (key, value) values (${PRUNED_KEY}, ${JSON.stringify({ id: r.top })}::text::jsonb)
					on conflict (key) do update set value = excluded.value, updated_at = now()
					where (settings.value->>'id')::float8 < ${r.top}`;
			}
			return r.n;
		});
		total += n;
		if (n < batch) return total;
	}
}
