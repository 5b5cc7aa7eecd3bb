import type { Task } from 'graphile-worker';
import { advancePlan } from '../src/lib/server/executions/plans';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';

/** Starts the plan's next step, or ends the plan; a plan that moved on already is left as it is. */
export const plans__advance: Task = async (raw) => {
	const payload = parseJobPayload('plans__advance', raw);
	await advancePlan(payload.planId);
};
