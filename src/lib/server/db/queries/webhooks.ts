import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { webhookDeliveries, webhooks } from '../schema';
import type { Expect, SameColumns } from '../same-type';
import type { NoticeKind, WebhookDelivery } from '../../../schemas/notifications';

/** A webhook with its secrets: only the delivery code reads this. */
export type WebhookRow = Omit<typeof webhooks.$inferSelect, 'createdBy'>;

// WebhookDelivery (src/lib/schemas, what Settings gets) copies the deliveries' columns: held to them.
type _WebhookDeliveryColumns = Expect<SameColumns<WebhookDelivery, typeof webhookDeliveries.$inferSelect>>;

/** Delivery attempts kept per webhook (older ones are deleted as new ones come). */
const KEEP_DELIVERIES = 30;
const PUBLIC_ORIGIN_KEY = 'notify.public_origin';

const columns = (sql: Sql | TransactionSql) => sql`id, name, kind, url, headers, enabled, created_at as "createdAt"`;

export async function listWebhooks(sql: Sql | TransactionSql): Promise<WebhookRow[]> {
	return sql<WebhookRow[]>`select ${columns(sql)} from webhooks order by created_at`;
}

export async function getWebhook(sql: Sql | TransactionSql, id: string): Promise<WebhookRow | null> {
	const [row] = await sql<WebhookRow[]>`select ${columns(sql)} from webhooks where id = ${id}`;
	return row ?? null;
}

/** The webhook, its row locked until the transaction ends (a change reads what it replaces). */
export async function lockWebhook(tx: TransactionSql, id: string): Promise<WebhookRow | null> {
	const [row] = await tx<WebhookRow[]>`select ${columns(tx)} from webhooks where id = ${id} for update`;
	return row ?? null;
}

/** The ids of the webhooks that are on, read in the caller's transaction (the one that makes something wait). */
export async function listEnabledWebhookIds(tx: Sql | TransactionSql): Promise<string[]> {
	const rows = await tx<{ id: string }[]>`select id from webhooks where enabled order by created_at`;
	return rows.map((r) => r.id);
}

export async function insertWebhook(
	tx: Sql | TransactionSql,
	w: Pick<WebhookRow, 'name' | 'kind' | 'url' | 'headers'> & { createdBy: string | null }
): Promise<WebhookRow> {
	const [row] = await tx<WebhookRow[]>`
		insert into webhooks (name, kind, url, headers, created_by)
		values (${w.name}, ${w.kind}, ${w.url}, ${JSON.stringify(w.headers)}::text::jsonb, ${w.createdBy})
		returning ${columns(tx)}`;
	return row;
}

/** Changes a webhook's name and kind, and its URL and headers where given (null: not found). */
export async function updateWebhook(
	tx: Sql | TransactionSql,
	id: string,
	w: Pick<WebhookRow, 'name' | 'kind'> & Partial<Pick<WebhookRow, 'url' | 'headers'>>
): Promise<WebhookRow | null> {
	const [row] = await tx<WebhookRow[]>`
		update webhooks set name = ${w.name}, kind = ${w.kind},
			url = coalesce(${w.url ?? null}::text, url),
			headers = coalesce(${w.headers ? JSON.stringify(w.headers) : null}::text::jsonb, headers)
		where id = ${id}
		returning ${columns(tx)}`;
	return row ?? null;
}

export async function deleteWebhook(tx: Sql | TransactionSql, id: string): Promise<WebhookRow | null> {
	const [row] = await tx<WebhookRow[]>`delete from webhooks where id = ${id} returning ${columns(tx)}`;
	return row ?? null;
}

export async function setWebhookEnabled(tx: Sql | TransactionSql, id: string, enabled: boolean): Promise<WebhookRow | null> {
	const [row] = await tx<WebhookRow[]>`update webhooks set enabled = ${enabled} where id = ${id} returning ${columns(tx)}`;
	return row ?? null;
}

/** Records one delivery attempt and drops the webhook's attempts beyond the newest KEEP_DELIVERIES. */
export async function recordDelivery(
	sql: Sql,
	d: { webhookId: string; noticeKind: NoticeKind; ok: boolean; httpStatus: number | null; error: string | null; attempt: number; final: boolean }
): Promise<void> {
	// A webhook removed meanwhile keeps no record (the insert's check and a delete can race: 23503).
	await sql
		.begin(async (tx) => {
			const inserted = await tx`
			insert into webhook_deliveries (webhook_id, notice_kind, ok, http_status, error, attempt, final)
			select ${d.webhookId}, ${d.noticeKind}, ${d.ok}, ${d.httpStatus}, ${d.error}, ${d.attempt}, ${d.final}
			where exists (select 1 from webhooks where id = ${d.webhookId})
			returning id`;
			if (!inserted.length) return;
			await tx`
			delete from webhook_deliveries where webhook_id = ${d.webhookId} and id not in (
				select id from webhook_deliveries where webhook_id = ${d.webhookId} order by id desc limit ${KEEP_DELIVERIES})`;
		})
		.catch((e: { code?: string }) => {
			if (e.code !== '23503') throw e;
		});
}

/** Per webhook: when it last worked and its latest failed attempts (newest first, `limit` each). */
export async function deliverySummaries(sql: Sql | TransactionSql, limit = 5): Promise<Map<string, { lastOkAt: string | null; failures: WebhookDelivery[] }>> {
	const rows = await sql<(WebhookDelivery & { webhookId: string; rank: number })[]>`
		select * from (
			select webhook_id as "webhookId", notice_kind as "noticeKind", ok, http_status as "httpStatus", error, attempt, final, at,
				row_number() over (partition by webhook_id, ok order by id desc)::int as rank
			from webhook_deliveries) d
		where (ok and rank = 1) or (not ok and rank <= ${limit})
		order by at desc`;
	const out = new Map<string, { lastOkAt: string | null; failures: WebhookDelivery[] }>();
	for (const { webhookId, rank: _rank, ...d } of rows) {
		const s = out.get(webhookId) ?? { lastOkAt: null, failures: [] };
		if (d.ok) s.lastOkAt = d.at;
		else s.failures.push(d);
		out.set(webhookId, s);
	}
	return out;
}

/** Whether the row a notice names still waits (a retry of a decided approval sends nothing). */
export async function noticeStillWaiting(sql: Sql, kind: NoticeKind, id: string | null): Promise<boolean> {
	// An ended plan stays ended: its notice is news, not a wait.
	if (!id || kind === 'test' || kind === 'plan_end') return true;
	const rows =
		kind === 'approval'
			? await sql`select 1 from executions where id = ${id} and status = 'awaiting_approval'`
			: kind === 'question'
				? await sql`select 1 from session_questions where id = ${id} and status = 'open'`
				: await sql`select 1 from plans where id = ${id} and status = 'proposed'`;
	return rows.length > 0;
}

/** The origin links in notices start with (Settings), or null when none was set. */
export async function getPublicOrigin(sql: Sql | TransactionSql): Promise<string | null> {
	const [row] = await sql<{ value: { origin?: string } }[]>`select value from settings where key = ${PUBLIC_ORIGIN_KEY}`;
	return row?.value.origin || null;
}

export async function setPublicOrigin(sql: Sql | TransactionSql, origin: string | null): Promise<void> {
	if (!origin) await sql`delete from settings where key = ${PUBLIC_ORIGIN_KEY}`;
	else
		await sql`insert into settings (key, value) values (${PUBLIC_ORIGIN_KEY}, ${JSON.stringify({ origin })}::text::jsonb)
			on conflict (key) do update set value = excluded.value, updated_at = now()`;
}
