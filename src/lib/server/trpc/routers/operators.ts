import { TRPCError } from '@trpc/server';
import { changePasswordInput, createOperatorInput, resetPasswordInput, setDisabledInput, setRoleInput } from '$lib/schemas/operators';
import {
	adminCreateOperator,
	adminResetPassword,
	adminSetDisabled,
	adminSetRole,
	changeOwnPassword,
	listOperators,
	type AccountError
} from '$lib/server/db/queries/operators';
import { adminProcedure, operatorProcedure, router } from '../t';

function orThrow<T>(r: T | AccountError): T {
	if (r && typeof r === 'object' && 'error' in r) throw new TRPCError({ code: r.code, message: r.error });
	return r;
}

/** Accounts: admins manage every operator; everyone changes their own password. */
export const operatorsRouter = router({
	list: adminProcedure.query(() => listOperators()),
	create: adminProcedure.input(createOperatorInput).mutation(async ({ input, ctx }) => orThrow(await adminCreateOperator(ctx.user, input))),
	resetPassword: adminProcedure.input(resetPasswordInput).mutation(async ({ input, ctx }) => orThrow(await adminResetPassword(ctx.user, input.id, input.password))),
	setDisabled: adminProcedure.input(setDisabledInput).mutation(async ({ input, ctx }) => orThrow(await adminSetDisabled(ctx.user, input.id, input.disabled))),
	setRole: adminProcedure.input(setRoleInput).mutation(async ({ input, ctx }) => orThrow(await adminSetRole(ctx.user, input.id, input.role))),
	changePassword: operatorProcedure.input(changePasswordInput).mutation(async ({ input, ctx }) => {
		orThrow(await changeOwnPassword(ctx.user, ctx.event.locals.sessionToken, input.current, input.next));
		return { ok: true as const };
	})
});
