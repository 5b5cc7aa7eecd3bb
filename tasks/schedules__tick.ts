import type { Task } from 'graphile-worker';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';
import { tickSchedule } from '../src/lib/server/schedules/tick';

/**
 * `schedules__tick` — `{ scheduleId, slot }`, queued with `run_at` = the slot: runs that slot of the
 * schedule once (a session of its own) and queues the next. A stale job (the schedule was edited,
 * paused or deleted, or this slot already ran) does nothing.
 */
export const schedules__tick: Task = async (raw, helpers) => {
	const payload = parseJobPayload('schedules__tick', raw);
	const r = await tickSchedule(payload);
	if (r.outcome === 'done' && r.started.length) helpers.logger.info(`schedules__tick: ${payload.scheduleId} ran for ${payload.slot}; next ${r.next ?? 'none'}`);
};
