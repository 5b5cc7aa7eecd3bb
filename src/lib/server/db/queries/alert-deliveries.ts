import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { alertDeliveries } from '../schema';

type Delivery = typeof alertDeliveries.$inferSelect;
export type DeliveryRow = Pick<Delivery, 'id' | 'hookId' | 'body' | 'duplicateOf' | 'processedAt'>;

/** What became of one alert of a delivery (stored on the delivery when the job applied it). */
export type AlertOutcomeRow = { groupKey: string; outcome: string; sessionId: string | null; incidentId: string | null };

/**
 * Stores a delivery as received. `duplicate_of` names the delivery this one repeats: the hook's
 * latest delivery within `dedupeS` had the same body (a sender retrying after a timeout sends the
 * same bytes again; the same body after a different one is a change of state, not a retry).
 */
export async function insertDelivery(
	tx: Sql | TransactionSql,
	d: { hookId: string; body: string; bodySha: string; dedupeS: number }
): Promise<Pick<Delivery, 'id' | 'duplicateOf'>> {
	const [row] = await tx<Pick<Delivery, 'id' | 'duplicateOf'>[]>`
		insert into alert_deliveries (hook_id, body, body_sha, duplicate_of)
		values (${d.hookId}, ${d.body}, ${d.bodySha}, (
			select case when body_sha = ${d.bodySha} then coalesce(duplicate_of, id) end from alert_deliveries
			where hook_id = ${d.hookId} and received_at > now() - make_interval(secs => ${d.dedupeS})
			order by received_at desc, id desc limit 1))
		returning id, duplicate_of as "duplicateOf"`;
	return row;
}

/** The delivery, locked for the job that applies it; null when it is gone or was applied already. */
export async function lockUnprocessedDelivery(tx: TransactionSql, id: string): Promise<DeliveryRow | null> {
	const [row] = await tx<DeliveryRow[]>`
		select id, hook_id as "hookId", body, duplicate_of as "duplicateOf", processed_at as "processedAt"
		from alert_deliveries where id = ${id} for update`;
	return row && !row.processedAt ? row : null;
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
