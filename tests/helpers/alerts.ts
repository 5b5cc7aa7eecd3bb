// Posting an alert in tests. The intake stores a delivery and answers 202; the `alerts__intake`
// job then applies it (groups, incidents, sessions, turns). These helpers give a test what the
// old synchronous answer gave: what became of each alert.
import type postgres from 'postgres';
import type { AlertOutcomeRow } from '../../src/lib/server/db/queries/alert-deliveries';
import type { IntakeAnswer } from '../../src/lib/server/watches/intake';
import { scaled } from './time';

export type DeliveredAlert = IntakeAnswer & { body: IntakeAnswer['body'] & { alerts?: AlertOutcomeRow[] } };

/**
 * Posts a delivery as `POST /api/hooks/<id>` does and, once stored (202), applies it as the job
 * would, in this process (a worker that got to it first leaves it applied: the outcome is read
 * back either way), then drops the job so the test sees only the jobs the alert caused. The
 * answer carries `alerts`: the outcome of each alert (opened/joined/duplicate/…, session, incident).
 */
export async function deliverAlert(hookId: string, headers: Headers | Record<string, string>, body: Buffer | string | object): Promise<DeliveredAlert> {
	const { receiveDelivery } = await import('../../src/lib/server/watches/intake');
	const { applyDelivery } = await import('../../src/lib/server/watches/apply');
	const { sql } = await import('../../src/lib/server/db/index');
	const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
	const r = await receiveDelivery(hookId, headers instanceof Headers ? headers : new Headers(headers), bytes);
	if (r.status !== 202) return r;
	const deliveryId = String(r.body.deliveryId);
	await applyDelivery(deliveryId);
	await sql()`
		delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
		where t.id = j.task_id and t.identifier = 'alerts__intake' and j.payload->>'deliveryId' = ${deliveryId} and j.locked_at is null`;
	const [row] = await sql()<{ outcome: AlertOutcomeRow[] }[]>`select outcome from alert_deliveries where id = ${deliveryId}`;
	return { ...r, body: { ...r.body, alerts: row.outcome } };
}

/** What became of a delivery's alerts once the app's worker applied it (for tests that post over HTTP). */
export async function waitForAlertOutcome(sql: postgres.Sql, deliveryId: string, timeoutMs = 20_000): Promise<AlertOutcomeRow[]> {
	const until = Date.now() + scaled(timeoutMs);
	for (;;) {
		const [row] = await sql<
			{ outcome: AlertOutcomeRow[] | null }[]
		>`select outcome from alert_deliveries where id = ${deliveryId} and processed_at is not null`;
		if (row?.outcome) return row.outcome;
		if (Date.now() > until) throw new Error(`timed out waiting for alert delivery ${deliveryId} to be applied`);
		await new Promise((r) => setTimeout(r, 25));
	}
}

/** Applies every stored delivery not yet applied, oldest first, as the job would (and drops their jobs). */
export async function applyStoredDeliveries(): Promise<number> {
	const { applyDelivery } = await import('../../src/lib/server/watches/apply');
	const { sql } = await import('../../src/lib/server/db/index');
	const rows = await sql()<{ id: string }[]>`select id from alert_deliveries where processed_at is null order by received_at, id`;
	for (const r of rows) await applyDelivery(r.id);
	await sql()`
		delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
		where t.id = j.task_id and t.identifier = 'alerts__intake' and j.locked_at is null`;
	return rows.length;
}
