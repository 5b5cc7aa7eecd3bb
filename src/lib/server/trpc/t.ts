import { initTRPC, TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import { describeZodError } from '../../schemas/zod-error';
import type { Context } from './context';
import { READ_ONLY_TOKEN } from '../auth/request-guard';
import { NotAllowed } from '../executions/authority';
import { Refusal } from '../refusal';

export { describeZodError };

const t = initTRPC.context<Context>().create({
	errorFormatter({ shape, error }) {
		const zod = error.cause instanceof ZodError ? error.cause : null;
		// The client asks for the password and retries (the step-up dialog) when this is set.
		const stepUp = error.cause instanceof NotAllowed && error.cause.stepUp;
		return {
			...shape,
			message: zod ? describeZodError(zod) : shape.message,
			data: { code: shape.data.code, httpStatus: shape.data.httpStatus, path: shape.data.path, ...(stepUp ? { stepUp: true as const } : {}) }
		};
	}
});

export const router = t.router;

/** A domain function's Refusal (thrown, its transaction rolled back) answers with its own code and message. */
const refusals = t.middleware(async ({ next }) => {
	const r = await next();
	if (!r.ok && r.error.cause instanceof Refusal) throw new TRPCError({ code: r.error.cause.code, message: r.error.cause.message, cause: r.error.cause });
	return r;
});
export const createCallerFactory = t.createCallerFactory;

/**
 * Every procedure needs a signed-in operator (by cookie or API token), and a read-scoped token
 * only queries; hooks also check both, this is the second lock.
 */
export const operatorProcedure = t.procedure.use(refusals).use(({ ctx, next, type }) => {
	if (!ctx.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Sign in first.' });
	if (type !== 'query' && ctx.apiToken?.scope === 'read') throw new TRPCError({ code: 'FORBIDDEN', message: READ_ONLY_TOKEN.message });
	return next({ ctx: { ...ctx, user: ctx.user } });
});

/** For what only a signed-in browser may do (managing API tokens): never with an API token. */
export const browserProcedure = operatorProcedure.use(({ ctx, next }) => {
	if (ctx.apiToken) throw new TRPCError({ code: 'FORBIDDEN', message: 'API tokens are managed in Settings, signed in, not with a token.' });
	return next();
});

export const adminProcedure = operatorProcedure.use(({ ctx, next }) => {
	if (ctx.user.role !== 'admin') throw new TRPCError({ code: 'FORBIDDEN', message: 'Admins only.' });
	return next();
});

/** An admin's, signed in at a browser: for what approves in advance (always-allow rules). */
export const browserAdminProcedure = adminProcedure.use(({ ctx, next }) => {
	if (ctx.apiToken)
		throw new TRPCError({ code: 'FORBIDDEN', message: 'An always-allow rule approves in advance: create or change it signed in, not with an API token.' });
	return next();
});
