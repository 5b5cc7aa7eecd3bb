import type { Task } from 'graphile-worker';
import { rebuildReviewFacts } from '../src/lib/server/review/rebuild';
import { logger } from '../src/lib/server/log';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';

const log = logger('review');

/**
 * Rebuilds the review's stored facts when they are not of this code's version (the rules in
 * src/lib/server/db/review-rules.ts changed, or a migration just added them); returns at once when they
 * are, or while another rebuild runs. Cron queues it every minute with a job key (see
 * jobs/schedule.ts), so a new version is picked up within a minute of the worker starting.
 */
export const review__rebuild_facts: Task = async (raw) => {
	parseJobPayload('review__rebuild_facts', raw);
	const r = await rebuildReviewFacts({ ifStale: true });
	if (r) log.info({ ...r }, `rebuilt the facts of ${r.messages} messages in ${r.sessions} sessions (${Math.round(r.ms)} ms, version ${r.version})`);
};
