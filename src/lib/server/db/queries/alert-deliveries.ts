import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { alertDeliveries } from '../schema';

type Delivery = typeof alertDeliveries.$inferSelect;
export type DeliveryRow = Pick<Delivery, 'id' | 'hookId' | 'body' | 'duplicateOf' | 'processedAt' | 'receivedAt'>;

/** What became of one alert of a delivery (stored on the delivery when the job applied it). */
export type AlertOutcomeRow = { groupKey: string; outcome: string; sessionId: string | null; incidentId: string | null };

/** A delivery to store, and the job that applies it. */
export type NewDelivery = {
	id: string;
	hookId: string;
	body: string;
	bodySha: string;
	dedupeS: number;
	perMinute: number;
	task: string;
	queue: string;
	payload: unknown;
	priority: number;
};
export type StoredDelivery = Pick<Delivery, 'id' | 'duplicateOf'>;

/**
 * Stores a delivery as received and queues the job that applies it, in one statement (one round
 * trip, one commit: the intake answers as soon as it is durable), unless the hook has had
 * `perMinute` deliveries in the last minute (null then: nothing stored). `duplicate_of` names the
 * delivery this one repeats: the hook's latest delivery within `dedupeS` had the same body (a
 * sender retrying after a timeout sends the same bytes again; the same body after a different one
 * is a change of state, not a retry). No row is locked: concurrent deliveries of one hook do not
 * wait for each other (the limit may be passed by as many as arrive at the same instant).
 * Several may run in one transaction (watches/delivery-writer.ts): each is stamped with the clock,
 * not the transaction's start, so "the latest" is the one stored last.
 */
export async function storeDelivery(sql: Sql | TransactionSql, d: NewDelivery): Promise<StoredDelivery | null> {
	const [row] = await sql<StoredDelivery[]>`
		with recent as (
			select count(*)::int as n from alert_deliveries where hook_id = ${d.hookId} and received_at > now() - interval '1 minute'
		), prev as (
			select id, body_sha, duplicate_of from alert_deliveries
			where hook_id = ${d.hookId} and received_at > now() - make_interval(secs => ${d.dedupeS})
			order by received_at desc, id desc limit 1
		), stored as (
			insert into alert_deliveries (id, hook_id, body, body_sha, duplicate_of, received_at)
			select ${d.id}, ${d.hookId}, ${d.body}, ${d.bodySha}, (select case when prev.body_sha = ${d.bodySha} then coalesce(prev.duplicate_of, prev.id) end from prev), clock_timestamp()
			from recent where recent.n < ${d.perMinute}
			returning id, duplicate_of
		), queued as (
			select graphile_worker.add_job(${d.task}, ${JSON.stringify(d.payload)}::text::json, queue_name => ${d.queue}::text, priority => ${d.priority}::int) as job
			from stored
		)
		select stored.id, stored.duplicate_of as "duplicateOf", (select count(*) from queued) as jobs from stored`;
	return row ?? null;
}

/** The delivery, locked for the job that applies it; null when it is gone or was applied already. */
export async function lockUnprocessedDelivery(tx: TransactionSql, id: string): Promise<DeliveryRow | null> {
	const [row] = await tx<DeliveryRow[]>`
		select id, hook_id as "hookId", body, duplicate_of as "duplicateOf", processed_at as "processedAt", received_at as "receivedAt"
		from alert_deliveries where id = ${id} for update`;
	return row && !row.processedAt ? row : null;
}

/** The hook's "last alert" (Settings): set by the job, so the intake itself writes no hook row. */
export async function touchHookReceived(tx: TransactionSql, hookId: string, at: string): Promise<void> {
	await tx`update alert_hooks set last_received_at = greatest(last_received_at, ${at}::timestamptz) where id = ${hookId}`;
}

export async function markDeliveryProcessed(tx: TransactionSql, id: string, outcome: AlertOutcomeRow[] | { error: string }): Promise<void> {
	await tx`update alert_deliveries set processed_at = now(), outcome = ${JSON.stringify(outcome)}::text::jsonb where id = ${id}`;
}

export async function getDeliveryOutcome(
	sql: Sql | TransactionSql,
	id: string
): Promise<{ processedAt: string | null; outcome: AlertOutcomeRow[] | { error: string } | null } | null> {
	const [row] = await sql<{ processedAt: string | null; outcome: AlertOutcomeRow[] | { error: string } | null }[]>`
		select processed_at as "processedAt", outcome from alert_deliveries where id = ${id}`;
	return row ?? null;
}

/** Whether the delivery `id` (the one a sender's retry repeats) has been applied. */
export async function deliveryApplied(tx: TransactionSql, id: string): Promise<boolean> {
	const [row] = await tx`select 1 from alert_deliveries where id = ${id} and processed_at is not null`;
	return !!row;
}
