import { TRPCError } from '@trpc/server';
import { createWebhookInput, publicOriginInput, setWebhookEnabledInput, updateWebhookInput, webhookIdInput } from '$lib/schemas/notifications';
import { sql } from '$lib/server/db/index';
import { changePublicOrigin, changeWebhook, createWebhook, enableWebhook, notificationSettings, removeWebhook } from '$lib/server/notify/settings';
import { sendTest } from '$lib/server/notify/webhooks';
import { adminProcedure, router } from '../t';

/** Outgoing webhooks and the public origin their links use: admins only. URLs and headers never come back in full. */
export const notificationsRouter = router({
	settings: adminProcedure.query(() => notificationSettings(sql())),
	createWebhook: adminProcedure.input(createWebhookInput).mutation(({ input, ctx }) => createWebhook(ctx.user, input)),
	/** Name and kind as given; URL and headers only when given (Settings never has them in full). */
	updateWebhook: adminProcedure.input(updateWebhookInput).mutation(({ input, ctx }) => changeWebhook(ctx.user, input)),
	removeWebhook: adminProcedure.input(webhookIdInput).mutation(({ input, ctx }) => removeWebhook(ctx.user, input.id)),
	setEnabled: adminProcedure.input(setWebhookEnabledInput).mutation(({ input, ctx }) => enableWebhook(ctx.user, input.id, input.enabled)),
	sendTest: adminProcedure.input(webhookIdInput).mutation(async ({ input }) => {
		const r = await sendTest(sql(), input.id);
		if (!r) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such webhook.' });
		return r;
	}),
	setOrigin: adminProcedure.input(publicOriginInput).mutation(({ input, ctx }) => changePublicOrigin(ctx.user, input.origin))
});
