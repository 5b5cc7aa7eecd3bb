import type { z } from 'zod';
import type { createWebhookInput, updateWebhookInput, WebhookView } from '../../schemas/notifications';
import { sql, type Sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import {
	deleteWebhook,
	deliverySummaries,
	getPublicOrigin,
	insertWebhook,
	listWebhooks,
	lockWebhook,
	setPublicOrigin,
	setWebhookEnabled,
	updateWebhook
} from '../db/queries/webhooks';
import { env } from '../env';
import { Refusal } from '../refusal';
import { maskUrl, webhookView } from './mask';

// Outgoing webhooks and the public origin their links use, as Settings manages them: every
// change audited in its own transaction; URLs and headers never come back in full.

type Actor = { id: string; username: string };

const noSuchWebhook = () => new Refusal('NOT_FOUND', 'No such webhook.');

/** Every webhook as Settings shows it: secrets masked, last success and failures. */
export async function webhookViews(db: Sql): Promise<WebhookView[]> {
	const [hooks, summaries] = await Promise.all([listWebhooks(db), deliverySummaries(db)]);
	return hooks.map((w) => webhookView(w, summaries.get(w.id)));
}

/** What the notifications section of Settings loads (admins). */
export async function notificationSettings(db: Sql): Promise<{ webhooks: WebhookView[]; origin: string | null; envOrigin: string | null }> {
	return { webhooks: await webhookViews(db), origin: await getPublicOrigin(db), envOrigin: env().ORIGIN ?? null };
}

export function createWebhook(actor: Actor, input: z.output<typeof createWebhookInput>): Promise<WebhookView> {
	return sql().begin(async (tx) => {
		const w = await insertWebhook(tx, { ...input, createdBy: actor.id });
		await recordAudit(tx, {
			actor,
			action: 'webhook.created',
			route: 'settings',
			subjectType: 'webhook',
			subjectId: w.id,
			detail: { name: w.name, kind: w.kind, url: maskUrl(w.url), headers: Object.keys(w.headers) }
		});
		return webhookView(w, undefined);
	});
}

/** Name and kind as given; URL and headers only when given (Settings never has them in full). */
export function changeWebhook(actor: Actor, input: z.output<typeof updateWebhookInput>): Promise<WebhookView> {
	return sql().begin(async (tx) => {
		const { id, ...change } = input;
		const before = await lockWebhook(tx, id);
		if (!before) throw noSuchWebhook();
		// Headers often carry a token for the old address: they never follow the URL to another host by themselves.
		if (change.url && !change.headers && Object.keys(before.headers).length && new URL(change.url).origin !== new URL(before.url).origin) {
			throw new Refusal(
				'BAD_REQUEST',
				'headers: the URL now points at another host; type its headers again or remove them, so the old ones are not sent there'
			);
		}
		const w = (await updateWebhook(tx, id, change))!;
		await recordAudit(tx, {
			actor,
			action: 'webhook.updated',
			route: 'settings',
			subjectType: 'webhook',
			subjectId: w.id,
			detail: {
				name: w.name,
				kind: w.kind,
				before: {
					name: before.name,
					kind: before.kind,
					...(change.url ? { url: maskUrl(before.url) } : {}),
					...(change.headers ? { headers: Object.keys(before.headers) } : {})
				},
				...(change.url ? { url: maskUrl(w.url) } : {}),
				...(change.headers ? { headers: Object.keys(w.headers) } : {})
			}
		});
		return webhookView(w, undefined);
	});
}

export function removeWebhook(actor: Actor, id: string): Promise<{ ok: true }> {
	return sql().begin(async (tx) => {
		const w = await deleteWebhook(tx, id);
		if (!w) throw noSuchWebhook();
		await recordAudit(tx, { actor, action: 'webhook.removed', route: 'settings', subjectType: 'webhook', subjectId: w.id, detail: { name: w.name } });
		return { ok: true as const };
	});
}

export function enableWebhook(actor: Actor, id: string, enabled: boolean): Promise<{ ok: true }> {
	return sql().begin(async (tx) => {
		const w = await setWebhookEnabled(tx, id, enabled);
		if (!w) throw noSuchWebhook();
		await recordAudit(tx, {
			actor,
			action: enabled ? 'webhook.enabled' : 'webhook.disabled',
			route: 'settings',
			subjectType: 'webhook',
			subjectId: w.id,
			detail: { name: w.name }
		});
		return { ok: true as const };
	});
}

/** The origin links in notices use (null: ORIGIN from the environment), audited. */
export function changePublicOrigin(actor: Actor, input: string | null | undefined): Promise<{ origin: string | null }> {
	return sql().begin(async (tx) => {
		const origin = input ? new URL(input).origin : null;
		await setPublicOrigin(tx, origin);
		await recordAudit(tx, { actor, action: 'settings.public_origin', route: 'settings', detail: { origin } });
		return { origin };
	});
}
