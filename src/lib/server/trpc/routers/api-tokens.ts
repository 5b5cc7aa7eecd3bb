import { TRPCError } from '@trpc/server';
import { createApiTokenInput, revokeApiTokenInput } from '$lib/schemas/api-tokens';
import { sql } from '$lib/server/db/index';
import { listApiTokens } from '$lib/server/db/queries/api-tokens';
import { mintApiToken, revokeOwnApiToken } from '$lib/server/api-tokens/manage';
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
		return mintApiToken(ctx.user, { name: input.name, scope: input.scope, days: Number(input.expiresInDays) });
	}),

	/** Revokes a token at once: its requests get 401 and its open event streams end. */
	revoke: browserProcedure.input(revokeApiTokenInput).mutation(({ input, ctx }) => revokeOwnApiToken(ctx.user, input.id))
});
