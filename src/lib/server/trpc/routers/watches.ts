import { createHookInput, hookIdInput, muteGroupInput, muteHookInput } from '$lib/schemas/watches';
import { sql } from '$lib/server/db/index';
import { listHooks } from '$lib/server/db/queries/watches';
import { createHook, hookView, makeHookBearerOnly, removeHook, rotateHook, setAlertGroupMuted, setHookMuted } from '$lib/server/watches/hooks';
import { adminProcedure, router } from '../t';

/** Incoming alert hooks: admins only; every change audited; the secret is shown once. */
export const watchesRouter = router({
	hooks: adminProcedure.query(async () => (await listHooks(sql())).map((h) => hookView(h, h.openGroups))),
	createHook: adminProcedure.input(createHookInput).mutation(({ input, ctx }) => createHook(ctx.user, input)),
	rotateHook: adminProcedure.input(hookIdInput).mutation(({ input, ctx }) => rotateHook(ctx.user, input.id)),
	bearerOnlyHook: adminProcedure.input(hookIdInput).mutation(({ input, ctx }) => makeHookBearerOnly(ctx.user, input.id)),
	revokeHook: adminProcedure.input(hookIdInput).mutation(({ input, ctx }) => removeHook(ctx.user, input.id)),
	muteHook: adminProcedure.input(muteHookInput).mutation(({ input, ctx }) => setHookMuted(ctx.user, input.id, input.minutes)),
	/** Mutes the alert group behind an investigation (from its chat): later firings only count. */
	muteGroup: adminProcedure.input(muteGroupInput).mutation(({ input, ctx }) => setAlertGroupMuted(ctx.user, input.sessionId, input.minutes))
});
