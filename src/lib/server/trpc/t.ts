import { initTRPC, TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import type { Context } from './context';

/** Turns a zod failure into one readable line per field, e.g. `port: must be at most 65535`. */
export function describeZodError(error: ZodError): string {
	return error.issues
		.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
		.join('; ');
}

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

/** Every procedure needs a signed-in operator; hooks also check, this is the second lock. */
export const operatorProcedure = t.procedure.use(({ ctx, next }) => {
	if (!ctx.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Sign in first.' });
	return next({ ctx: { ...ctx, user: ctx.user } });
});

export const adminProcedure = operatorProcedure.use(({ ctx, next }) => {
	if (ctx.user.role !== 'admin') throw new TRPCError({ code: 'FORBIDDEN', message: 'Admins only.' });
	return next();
});
