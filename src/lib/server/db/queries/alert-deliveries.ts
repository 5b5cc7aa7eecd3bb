import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { alertDeliveries } from '../schema';

type Delivery = typeof alertDeliveries.$inferSelect;
export type DeliveryRow = Pick<Delivery, 'id' | 'hookId' | 'body' | 'duplicateOf' | 'processedAt' | 'receivedAt'>;

/** What became of one alert of a delivery (stored on the delivery when the job applied it). */
export type AlertOutcomeRow = { groupKey: string; outcome: string; sessionId: string | null; incidentId: string | null };

/** A delivery to store. */
export type NewDelivery = { id: string; hookId: string; body: string; bodySha: string };
/** What storing deliveries needs to know: the rate limit, the retry window, and the job that applies each. */
export type DeliveryRules = { dedupeS: number; perMinute: number; task: string; queue: string; priority: number };
export type StoredDelivery = Pick<Delivery, 'id' | 'duplicateOf'>;

/**
 * Stores deliveries as received, in the order given, and queues the job that applies each
 * (payload `{ deliveryId }`, in the same order), in one statement: one round trip, one commit,
 * one NOTIFY (the intake answers as soon as its rows are durable; watches/delivery-writer.ts sends
 * what arrived together). Returns, for each delivery, its row, or null when its hook has had
 * `perMinute` deliveries in the last minute (counting those before it here; nothing stored).
 * `duplicate_of` names the delivery one repeats: the hook's latest delivery within `dedupeS`
 * (stored earlier, or given before it here) had the same body — a sender retrying after a timeout
 * sends the same bytes again; the same body after a different one is a change of state, not a
 * retry; a retry of a retry names the first. No row is locked: concurrent statements do not wait
 * for each other (the limit may be passed by as many as arrive at the same instant). Each row's
 * `received_at` is the clock's when the statement ran, a microsecond apart in the order given, so
 * "the latest" is the one given last.
 */
export async function storeDeliveries(sql: Sql | TransactionSql, ds: NewDelivery[], r: DeliveryRules): Promise<(StoredDelivery | null)[]> {
	if (ds.length === 0) return [];
	const rows = await sql<StoredDelivery[]>`
		with input as (
			select t.id, t.hook_id, t.body, t.body_sha, t.n
			from unnest(${ds.map((d) => d.id)}::uuid[], ${ds.map((d) => d.hookId)}::uuid[], ${ds.map((d) => d.body)}::text[], ${ds.map((d) => d.bodySha)}::text[])
				with ordinality as t(id, hook_id, body, body_sha, n)
		), hooks as (
			select distinct hook_id from input
		), ranked as (
			select i.*, row_number() over (partition by i.hook_id order by i.n) + (
				select count(*) from alert_deliveries d where d.hook_id = i.hook_id and d.received_at > now() - interval '1 minute') as nth
			from input i
		), kept as (
			select id, hook_id, body, body_sha, n from ranked where nth <= ${r.perMinute}
		), chain as (
			-- Per hook: its latest stored delivery within the retry window (n = 0), then the ones kept here.
			select h.hook_id, p.id, p.body_sha, p.duplicate_of, 0::bigint as n from hooks h cross join lateral (
				select id, body_sha, duplicate_of from alert_deliveries d
				where d.hook_id = h.hook_id and d.received_at > now() - make_interval(secs => ${r.dedupeS})
				order by received_at desc, id desc limit 1) p
			union all
			select hook_id, id, body_sha, null::uuid, n from kept
		), runs as (
			-- A run: consecutive deliveries of a hook with the same body; each after the first repeats the first.
			select c.*, sum(starts) over (partition by c.hook_id order by c.n) as run from (
				select c.*, (c.body_sha is distinct from lag(c.body_sha) over (partition by c.hook_id order by c.n))::int as starts from chain c) c
		), firsts as (
			select distinct on (hook_id, run) hook_id, run, n, coalesce(duplicate_of, id) as original from runs order by hook_id, run, n
		), clock as (
			select clock_timestamp() as at
		), stored as (
			insert into alert_deliveries (id, hook_id, body, body_sha, duplicate_of, received_at)
			select k.id, k.hook_id, k.body, k.body_sha, case when k.n > f.n then f.original end, clock.at + k.n * interval '1 microsecond'
			from kept k join runs x on x.id = k.id and x.n = k.n join firsts f on f.hook_id = x.hook_id and f.run = x.run, clock
			returning id, duplicate_of
		), queued as (
			select graphile_worker.add_jobs(array(
				select (${r.task}::text, json_build_object('deliveryId', k.id), ${r.queue}::text, null::timestamptz, null::smallint, null::text, ${r.priority}::smallint, null::text[])::graphile_worker.job_spec
				from kept k join stored s on s.id = k.id order by k.n)) as job
			where exists (select 1 from stored)
		)
		select s.id, s.duplicate_of as "duplicateOf" from stored s where (select count(*) from queued) >= 0`;
	const byId = new Map(rows.map((x) => [x.id, x]));
	return ds.map((d) => byId.get(d.id) ?? null);
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
