import { TRPCError } from '@trpc/server';
import { createWebhookInput, publicOriginInput, setWebhookEnabledInput, updateWebhookInput, webhookIdInput, type WebhookView } from '$lib/schemas/notifications';
import { sql, type Sql } from '$lib/server/db/index';
import { recordAudit } from '$lib/server/db/queries/audit';
import { deleteWebhook, deliverySummaries, getPublicOrigin, insertWebhook, listWebhooks, setPublicOrigin, setWebhookEnabled, lockWebhook, updateWebhook } from '$lib/server/db/queries/webhooks';
import { env } from '$lib/server/env';
import { maskUrl, webhookView } from '$lib/server/notify/mask';
import { sendTest } from '$lib/server/notify/webhooks';
import { adminProcedure, router } from '../t';

/** Every webhook as Settings shows it: secrets masked, last success and failures. */
export async function webhookViews(db: Sql): Promise<WebhookView[]> {
	const [hooks, summaries] = await Promise.all([listWebhooks(db), deliverySummaries(db)]);
	return hooks.map((w) => webhookView(w, summaries.get(w.id)));
}

/** What the notifications section of Settings loads (admins). */
export async function notificationSettings(db: Sql): Promise<{ webhooks: WebhookView[]; origin: string | null; envOrigin: string | null }> {
	return { webhooks: await webhookViews(db), origin: await getPublicOrigin(db), envOrigin: env().ORIGIN ?? null };
}

const notFound = () => new TRPCError({ code: 'NOT_FOUND', message: 'No such webhook.' });

/** Outgoing webhooks and the public origin their links use: admins only. URLs and headers never come back in full. */
export const notificationsRouter = router({
	settings: adminProcedure.query(() => notificationSettings(sql())),

	createWebhook: adminProcedure.input(createWebhookInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const w = await insertWebhook(tx, { ...input, createdBy: ctx.user.id });
			await recordAudit(tx, {
				actor: ctx.user,
				action: 'webhook.created',
				route: 'settings',
				subjectType: 'webhook',
				subjectId: w.id,
				detail: { name: w.name, kind: w.kind, url: maskUrl(w.url), headers: Object.keys(w.headers) }
			});
			return webhookView(w, undefined);
		})
	),

	/** Name and kind as given; URL and headers only when given (Settings never has them in full). */
	updateWebhook: adminProcedure.input(updateWebhookInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const { id, ...change } = input;
			const before = await lockWebhook(tx, id);
			if (!before) throw notFound();
			// Headers often carry a token for the old address: they never follow the URL to another host by themselves.
			if (change.url && !change.headers && Object.keys(before.headers).length && new URL(change.url).origin !== new URL(before.url).origin) {
				throw new TRPCError({ code: 'BAD_REQUEST', message: 'headers: the URL now points at another host; type its headers again or remove them, so the old ones are not sent there' });
			}
			const w = (await updateWebhook(tx, id, change))!;
			await recordAudit(tx, {
				actor: ctx.user,
				action: 'webhook.updated',
				route: 'settings',
				subjectType: 'webhook',
				subjectId: w.id,
				detail: {
					name: w.name,
					kind: w.kind,
					before: { name: before.name, kind: before.kind, ...(change.url ? { url: maskUrl(before.url) } : {}), ...(change.headers ? { headers: Object.keys(before.headers) } : {}) },
					...(change.url ? { url: maskUrl(w.url) } : {}),
					...(change.headers ? { headers: Object.keys(w.headers) } : {})
				}
			});
			return webhookView(w, undefined);
		})
	),

	removeWebhook: adminProcedure.input(webhookIdInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const w = await deleteWebhook(tx, input.id);
			if (!w) throw notFound();
			await recordAudit(tx, { actor: ctx.user, action: 'webhook.removed', route: 'settings', subjectType: 'webhook', subjectId: w.id, detail: { name: w.name } });
			return { ok: true };
		})
	),

	setEnabled: adminProcedure.input(setWebhookEnabledInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const w = await setWebhookEnabled(tx, input.id, input.enabled);
			if (!w) throw notFound();
			await recordAudit(tx, { actor: ctx.user, action: input.enabled ? 'webhook.enabled' : 'webhook.disabled', route: 'settings', subjectType: 'webhook', subjectId: w.id, detail: { name: w.name } });
			return { ok: true };
		})
	),

	sendTest: adminProcedure.input(webhookIdInput).mutation(async ({ input }) => {
		const r = await sendTest(sql(), input.id);
		if (!r) throw notFound();
		return r;
	}),

	setOrigin: adminProcedure.input(publicOriginInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const origin = input.origin ? new URL(input.origin).origin : null;
			await setPublicOrigin(tx, origin);
			await recordAudit(tx, { actor: ctx.user, action: 'settings.public_origin', route: 'settings', detail: { origin } });
			return { origin };
		})
	)
});
