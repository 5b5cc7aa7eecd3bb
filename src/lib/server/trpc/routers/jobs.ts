import { gaveUpGroupInput } from '$lib/schemas/jobs';
import { sql } from '$lib/server/db/index';
import { listGaveUpJobs } from '$lib/server/db/queries/jobs';
import { dismissGaveUp, retryGaveUp } from '$lib/server/jobs/gave-up';
import { adminProcedure, operatorProcedure, router } from '../t';

/** Background jobs that gave up: every operator sees them (Ops); admins dismiss or retry them, audited. */
export const jobsRouter = router({
	gaveUp: operatorProcedure.query(() => listGaveUpJobs(sql())),
	dismiss: adminProcedure.input(gaveUpGroupInput).mutation(({ input, ctx }) => dismissGaveUp(ctx.user, input.task, input.upToId)),
	retry: adminProcedure.input(gaveUpGroupInput).mutation(({ input, ctx }) => retryGaveUp(ctx.user, input.task, input.upToId))
});
