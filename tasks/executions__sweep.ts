import type { Task } from 'graphile-worker';
import { sql } from '../src/lib/server/db/index';
import { sweep } from '../src/lib/server/executions/lifecycle';
import { recheckLeftovers } from '../src/lib/server/executions/remote-stop';
import { releaseDeadWorkerLocks } from '../src/lib/server/db/queries/workers';
import { closeAbandonedJobs } from '../src/lib/server/db/queries/jobs';
import { scheduleSweep } from '../src/lib/server/jobs/schedule';
import { logger } from '../src/lib/server/log';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';

const log = logger('sweeper');

/**
 * Releases dead workers' jobs and accounts for them (closeAbandonedJobs), fails executions
 * whose worker died (lease expired) and expires stale approvals, then
 * schedules itself again; the job key keeps exactly one sweeper queued across all processes.
 */
export const executions__sweep: Task = async (raw) => {
	parseJobPayload('executions__sweep', raw);
	const released = await releaseDeadWorkerLocks(sql());
	if (released.length) log.warn({ workers: released }, `released the locks of ${released.length} dead worker(s)`);
	const closed = await closeAbandonedJobs(sql());
	if (closed.removed || closed.explained)
		log.warn(closed, `jobs of dead workers: ${closed.removed} superseded copy(ies) removed, ${closed.explained} marked "its worker process died"`);
	const r = await sweep(sql());
	if (r.lost || r.expired || r.plansExpired || r.resumed)
		log.info(
			{ ...r },
			`${r.lost} lost execution(s) interrupted, ${r.expired} approval(s) expired, ${r.plansExpired} plan(s) expired, ${r.resumed} reply(ies) resumed`
		);
	// Targets that could not be read back because their host did not answer: read them now if it does.
	await recheckLeftovers().catch((err: Error) => log.warn({ err: err.message }, `late read-backs failed: ${err.message}`));
	await scheduleSweep();
};
