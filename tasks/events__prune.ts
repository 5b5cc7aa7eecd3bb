import type { Task } from 'graphile-worker';
import { sql } from '../src/lib/server/db/index';
import { pruneEvents } from '../src/lib/server/db/queries/events';
import { env } from '../src/lib/server/env';
import { logger } from '../src/lib/server/log';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';

const log = logger('events');

/** Hourly: removes events older than NOMOS_EVENTS_RETENTION_DAYS (clients behind that are told to reload). */
export const events__prune: Task = async (raw) => {
	parseJobPayload('events__prune', raw);
	const n = await pruneEvents(sql(), env().NOMOS_EVENTS_RETENTION_DAYS);
	if (n) log.info({ pruned: n }, `pruned ${n} older than ${env().NOMOS_EVENTS_RETENTION_DAYS} days`);
};
