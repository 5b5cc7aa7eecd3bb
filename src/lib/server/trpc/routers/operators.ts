import { TRPCError } from '@trpc/server';
import { changePasswordInput, confirmPasswordInput, createOperatorInput, resetPasswordInput, setDisabledInput, setRoleInput } from '$lib/schemas/operators';
import { adminSetDisabled, adminSetRole, listOperators, type AccountError } from '$lib/server/db/queries/operators';
import { adminCreateOperator, adminResetPassword, changeOwnPassword } from '$lib/server/auth/accounts';
import { confirmOwnPassword, markSteppedUp, type PasswordRefusal } from '$lib/server/auth/step-up';
import { sql } from '$lib/server/db/index';
import { adminProcedure, browserProcedure, operatorProcedure, router } from '../t';
import { surfaceOf } from '../credential';

function orThrow<T>(r: T | AccountError | PasswordRefusal): T {
	if (r && typeof r === 'object' && 'error' in r) throw new TRPCError({ code: r.code, message: r.error });
	if (r && typeof r === 'object' && 'ok' in r && r.ok === false) throw new TRPCError({ code: r.code, message: r.message });
	return r as T;
}

/** Accounts: admins manage every operator; everyone changes their own password. */
export const operatorsRouter = router({
	list: adminProcedure.query(() => listOperators(sql())),
	create: adminProcedure.input(createOperatorInput).mutation(async ({ input, ctx }) => orThrow(await adminCreateOperator(sql(), ctx.user, input))),
	resetPassword: adminProcedure
		.input(resetPasswordInput)
		.mutation(async ({ input, ctx }) => orThrow(await adminResetPassword(sql(), ctx.user, input.id, input.password))),
	setDisabled: adminProcedure
		.input(setDisabledInput)
		.mutation(async ({ input, ctx }) => orThrow(await adminSetDisabled(sql(), ctx.user, input.id, input.disabled))),
	setRole: adminProcedure.input(setRoleInput).mutation(async ({ input, ctx }) => orThrow(await adminSetRole(sql(), ctx.user, input.id, input.role))),
	/** Their other sessions end and every API token of theirs is revoked (the answer says how many). */
	changePassword: operatorProcedure.input(changePasswordInput).mutation(async ({ input, ctx }) => {
		const session = { currentToken: ctx.event.locals.sessionToken, address: ctx.event.getClientAddress() };
		const r = orThrow(await changeOwnPassword(sql(), ctx.user, session, input.current, input.next));
		return { ok: true as const, revokedTokens: r.revokedTokens };
	}),

	/** Step-up: the password again, so this session may approve what cannot be undone for NOMOS_STEP_UP_MIN minutes. */
	confirmPassword: browserProcedure.input(confirmPasswordInput).mutation(async ({ input, ctx }) => {
		const token = ctx.event.locals.sessionToken;
		if (!token) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Sign in first.' });
		orThrow(await confirmOwnPassword(sql(), ctx.user, input.password, ctx.event.getClientAddress()));
		await markSteppedUp(ctx.user, token, surfaceOf(ctx.event));
		return { ok: true as const };
	})
});
