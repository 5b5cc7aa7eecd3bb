import { TRPCError } from '@trpc/server';
import { createApiTokenInput, revokeApiTokenInput } from '$lib/schemas/api-tokens';
import { sql } from '$lib/server/db/index';
import { insertApiToken, listApiTokens, revokeApiToken } from '$lib/server/db/queries/api-tokens';
import { recordAudit } from '$lib/server/db/queries/audit';
import { emitEvent } from '$lib/server/db/queries/events';
import { apiTokenStreamKey } from '$lib/server/realtime/sse';
import { confirmOwnPassword } from '$lib/server/auth/step-up';
import { browserProcedure, router } from '../t';

/**
 * Personal access tokens: each operator creates, lists and revokes their own, signed in (never
 * with a token). A token outlives the session that mints it, so minting asks for the password
 * and every token expires; a password change or reset revokes them all (db/queries/operators.ts).
 */
export const apiTokensRouter = router({
	list: browserProcedure.query(({ ctx }) => listApiTokens(sql(), ctx.user.id)),

	/** Returns the token once; only its hash is kept. */
	create: browserProcedure.input(createApiTokenInput).mutation(async ({ input, ctx }) => {
		const check = await confirmOwnPassword(sql(), ctx.user, input.password, ctx.event.getClientAddress());
		if (!check.ok) throw new TRPCError({ code: check.code, message: check.message });
		return sql().begin(async (tx) => {
			const r = await insertApiToken(tx, ctx.user.id, { name: input.name, scope: input.scope, days: Number(input.expiresInDays) });
			await recordAudit(tx, {
				actor: ctx.user,
				action: 'api_token.created',
				route: 'settings',
				subjectType: 'api_token',
				subjectId: r.listing.id,
				detail: { name: input.name, scope: input.scope, expiresAt: r.listing.expiresAt }
			});
			return r;
		});
	}),

	/** Revokes a token at once: its requests get 401 and its open event streams end. */
	revoke: browserProcedure.input(revokeApiTokenInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const r = await revokeApiToken(tx, ctx.user.id, input.id);
			if (!r) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such token (or it was already revoked).' });
			await emitEvent(tx, { sessionId: null, type: 'auth.revoked', payload: { operatorId: ctx.user.id, only: apiTokenStreamKey(input.id) } });
			await recordAudit(tx, { actor: ctx.user, action: 'api_token.revoked', route: 'settings', subjectType: 'api_token', subjectId: input.id, detail: { name: r.name } });
			return { ok: true as const };
		})
	)
});
