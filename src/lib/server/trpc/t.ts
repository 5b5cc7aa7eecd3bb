import { initTRPC, TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import { describeZodError } from '../../schemas/zod-error';
import type { Context } from './context';
import { READ_ONLY_TOKEN } from '../auth/request-guard';

export { describeZodError };

const t = initTRPC.context<Context>().create({
	errorFormatter({ shape, error }) {
		const zod = error.cause instanceof ZodError ? error.cause : null;
		return {
			...shape,
			message: zod ? describeZodError(zod) : shape.message,
			data: { code: shape.data.code, httpStatus: shape.data.httpStatus, path: shape.data.path }
		};
	}
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/**
 * Every procedure needs a signed-in operator (by cookie or API token), and a read-scoped token
 * only queries; hooks also check both, this is the second lock.
 */
export const operatorProcedure = t.procedure.use(({ ctx, next, type }) => {
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
