import type { Sql } from '../db/index';
import { getPublicOrigin, getWebhook, noticeStillWaiting, recordDelivery } from '../db/queries/webhooks';
import { env } from '../env';
import { deliver, type DeliveryResult } from './deliver';
import { testNotice, type NotifyPayload } from './notices';

/** The origin links in notices start with: the one set in Settings, else ORIGIN. */
export async function publicOrigin(sql: Sql): Promise<string | null> {
	return (await getPublicOrigin(sql)) ?? env().ORIGIN ?? null;
}

export class DeliveryFailed extends Error {}

/**
 * One attempt of a queued delivery (a `notify__webhook` job). Nothing is sent when the webhook
 * was removed or turned off, or the approval or question no longer waits (a retry after it was
 * decided). Every attempt is recorded; a failure throws, so graphile-worker retries it with
 * backoff until `maxAttempts`.
 */
export async function deliverQueued(sql: Sql, p: NotifyPayload, attempt: { n: number; max: number }): Promise<'sent' | 'skipped'> {
	const hook = await getWebhook(sql, p.webhookId);
	if (!hook?.enabled) return 'skipped';
	if (!(await noticeStillWaiting(sql, p.notice.kind, p.notice.subjectId))) return 'skipped';
	const r = await deliver(hook, p.notice, await publicOrigin(sql));
	const final = r.ok || attempt.n >= attempt.max;
	await recordDelivery(sql, {
		webhookId: hook.id,
		noticeKind: p.notice.kind,
		ok: r.ok,
		httpStatus: r.httpStatus,
		error: r.ok ? null : r.error,
		attempt: attempt.n,
		final
	});
	if (!r.ok) throw new DeliveryFailed(`webhook ${hook.name}: ${r.error}${final ? ' (giving up)' : ''}`);
	return 'sent';
}

/** "Send test" in Settings: one attempt now, recorded like any other, its result returned. */
export async function sendTest(sql: Sql, webhookId: string): Promise<DeliveryResult | null> {
	const hook = await getWebhook(sql, webhookId);
	if (!hook) return null;
	const r = await deliver(hook, testNotice(), await publicOrigin(sql));
	await recordDelivery(sql, {
		webhookId: hook.id,
		noticeKind: 'test',
		ok: r.ok,
		httpStatus: r.httpStatus,
		error: r.ok ? null : r.error,
		attempt: 1,
		final: true
	});
	return r;
}
