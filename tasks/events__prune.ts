import type { Task } from 'graphile-worker';
import { sql } from '../src/lib/server/db/index';
import { pruneEvents } from '../src/lib/server/db/queries/events';
import { env } from '../src/lib/server/env';

/** Hourly: removes events older than NOMOS_EVENTS_RETENTION_DAYS (clients behind that are told to reload). */
export const events__prune: Task = async () => {
	const n = await pruneEvents(sql(), env().NOMOS_EVENTS_RETENTION_DAYS);
	if (n) console.log(`[nomos] events: pruned ${n} older than ${env().NOMOS_EVENTS_RETENTION_DAYS} days`);
};
