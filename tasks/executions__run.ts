import type { Task } from 'graphile-worker';
import { runExecution } from '../src/lib/server/executions/runner';

/** The job payload for running one approved execution. */
export interface RunExecutionPayload {
	executionId: string;
}

function assertPayload(p: unknown): asserts p is RunExecutionPayload {
	if (!p || typeof (p as RunExecutionPayload).executionId !== 'string') throw new Error('invalid executions__run payload');
}

/** Runs one approved execution; a duplicate delivery finds it already claimed and does nothing. */
export const executions__run: Task = async (payload, helpers) => {
	assertPayload(payload);
	await runExecution(payload.executionId, { signal: helpers.abortSignal });
};
