import { TRPCError } from '@trpc/server';
import { createHookInput, hookIdInput, muteGroupInput, muteHookInput, type HookView } from '$lib/schemas/watches';
import { sql } from '$lib/server/db/index';
import { recordAudit } from '$lib/server/db/queries/audit';
import { insertHook, listHooks, muteGroup, muteHook, revokeHook, setHookSecret, type AlertHookRow } from '$lib/server/db/queries/watches';
import { emitEvent } from '$lib/server/db/queries/events';
import { newHookSecret } from '$lib/server/watches/secret';
import { adminProcedure, router } from '../t';

const view = (h: AlertHookRow, openGroups = 0): HookView => ({
	id: h.id,
	name: h.name,
	kind: h.kind,
	path: `/api/hooks/${h.id}`,
	mutedUntil: h.mutedUntil,
	lastReceivedAt: h.lastReceivedAt,
	openGroups
});
const notFound = () => new TRPCError({ code: 'NOT_FOUND', message: 'No such hook.' });

/** Incoming alert hooks: admins only; every change audited; the secret is shown once. */
export const watchesRouter = router({
	hooks: adminProcedure.query(async () => (await listHooks(sql())).map((h) => view(h, h.openGroups))),

	createHook: adminProcedure.input(createHookInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const h = await insertHook(tx, { ...input, secret: newHookSecret(), createdBy: ctx.user.id });
			await recordAudit(tx, { actor: ctx.user, action: 'hook.created', route: 'settings', subjectType: 'hook', subjectId: h.id, detail: { name: h.name, kind: h.kind } });
			return { ...view(h), secret: h.secret };
		})
	),

	rotateHook: adminProcedure.input(hookIdInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const h = await setHookSecret(tx, input.id, newHookSecret());
			if (!h) throw notFound();
			await recordAudit(tx, { actor: ctx.user, action: 'hook.rotated', route: 'settings', subjectType: 'hook', subjectId: h.id, detail: { name: h.name } });
			return { ...view(h), secret: h.secret };
		})
	),

	revokeHook: adminProcedure.input(hookIdInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const h = await revokeHook(tx, input.id);
			if (!h) throw notFound();
			await recordAudit(tx, { actor: ctx.user, action: 'hook.revoked', route: 'settings', subjectType: 'hook', subjectId: h.id, detail: { name: h.name } });
			return { ok: true };
		})
	),

	muteHook: adminProcedure.input(muteHookInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const h = await muteHook(tx, input.id, input.minutes);
			if (!h) throw notFound();
			await recordAudit(tx, { actor: ctx.user, action: input.minutes ? 'hook.muted' : 'hook.unmuted', route: 'settings', subjectType: 'hook', subjectId: h.id, detail: { name: h.name, minutes: input.minutes } });
			return view(h);
		})
	),

	/** Mutes the alert group behind an investigation (from its chat): later firings only count. */
	muteGroup: adminProcedure.input(muteGroupInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const g = await muteGroup(tx, input.sessionId, input.minutes);
			if (!g) throw new TRPCError({ code: 'NOT_FOUND', message: 'No alert opened this chat.' });
			await recordAudit(tx, {
				actor: ctx.user,
				action: input.minutes ? 'alert.muted' : 'alert.unmuted',
				route: 'chat',
				subjectType: 'alert_group',
				subjectId: g.id,
				sessionId: input.sessionId,
				detail: { title: g.title, minutes: input.minutes }
			});
			await emitEvent(tx, { sessionId: input.sessionId, type: 'session.updated', payload: { alertMuted: input.minutes > 0 } });
			return { ok: true, mutedUntil: g.mutedUntil };
		})
	)
});
