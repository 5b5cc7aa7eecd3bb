import { TRPCError } from '@trpc/server';
import { changePasswordInput, createOperatorInput, resetPasswordInput, setDisabledInput, setRoleInput } from '$lib/schemas/operators';
import { adminSetDisabled, adminSetRole, listOperators, type AccountError } from '$lib/server/db/queries/operators';
import { adminCreateOperator, adminResetPassword, changeOwnPassword } from '$lib/server/auth/accounts';
import { sql } from '$lib/server/db/index';
import { adminProcedure, operatorProcedure, router } from '../t';

function orThrow<T>(r: T | AccountError): T {
	if (r && typeof r === 'object' && 'error' in r) throw new TRPCError({ code: r.code, message: r.error });
	return r;
}

/** Accounts: admins manage every operator; everyone changes their own password. */
export const operatorsRouter = router({
	list: adminProcedure.query(() => listOperators(sql())),
	create: adminProcedure.input(createOperatorInput).mutation(async ({ input, ctx }) => orThrow(await adminCreateOperator(sql(), ctx.user, input))),
	resetPassword: adminProcedure.input(resetPasswordInput).mutation(async ({ input, ctx }) => orThrow(await adminResetPassword(sql(), ctx.user, input.id, input.password))),
	setDisabled: adminProcedure.input(setDisabledInput).mutation(async ({ input, ctx }) => orThrow(await adminSetDisabled(sql(), ctx.user, input.id, input.disabled))),
	setRole: adminProcedure.input(setRoleInput).mutation(async ({ input, ctx }) => orThrow(await adminSetRole(sql(), ctx.user, input.id, input.role))),
	changePassword: operatorProcedure.input(changePasswordInput).mutation(async ({ input, ctx }) => {
		orThrow(await changeOwnPassword(sql(), ctx.user, ctx.event.locals.sessionToken, input.current, input.next));
		return { ok: true as const };
	})
});
