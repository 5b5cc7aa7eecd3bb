import type { Task } from 'graphile-worker';
import { advancePlan } from '../src/lib/server/executions/plans';

/** The job that moves an approved plan on (after its approval and after each step ends). */
export interface AdvancePlanPayload {
	planId: string;
}

function assertPayload(p: unknown): asserts p is AdvancePlanPayload {
	if (!p || typeof (p as AdvancePlanPayload).planId !== 'string') throw new Error('invalid plans__advance payload');
}

/** Starts the plan's next step, or ends the plan; a plan that moved on already is left as it is. */
export const plans__advance: Task = async (payload) => {
	assertPayload(payload);
	await advancePlan(payload.planId);
};
