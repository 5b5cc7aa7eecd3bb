import { TRPCError } from '@trpc/server';
import { gaveUpGroupInput } from '$lib/schemas/jobs';
import { sql } from '$lib/server/db/index';
import { recordAudit } from '$lib/server/db/queries/audit';
import { RETRYABLE_TASKS, dismissGaveUpJobs, emitJobsChanged, listGaveUpJobs, retryGaveUpJobs } from '$lib/server/db/queries/jobs';
import { adminProcedure, operatorProcedure, router } from '../t';

/** Background jobs that gave up: every operator sees them (Ops); admins dismiss or retry them, audited. */
export const jobsRouter = router({
	gaveUp: operatorProcedure.query(() => listGaveUpJobs(sql())),

	dismiss: adminProcedure.input(gaveUpGroupInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const count = await dismissGaveUpJobs(tx, input.task, input.upToId);
			if (count) {
				await recordAudit(tx, { actor: ctx.user, action: 'jobs.dismissed', route: 'ops', subjectType: 'task', subjectId: input.task, detail: { count } });
				await emitJobsChanged(tx, { change: 'dismissed', tasks: [input.task] });
			}
			return { count };
		})
	),

	retry: adminProcedure.input(gaveUpGroupInput).mutation(({ input, ctx }) => {
		if (!RETRYABLE_TASKS.includes(input.task)) throw new TRPCError({ code: 'BAD_REQUEST', message: `${input.task} is not run again by hand: it could repeat an effect. Dismiss it instead.` });
		return sql().begin(async (tx) => {
			const count = await retryGaveUpJobs(tx, input.task, input.upToId);
			if (count) {
				await recordAudit(tx, { actor: ctx.user, action: 'jobs.retried', route: 'ops', subjectType: 'task', subjectId: input.task, detail: { count } });
				await emitJobsChanged(tx, { change: 'retried', tasks: [input.task] });
			}
			return { count };
		});
	})
});
