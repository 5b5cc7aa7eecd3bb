import type { Task } from 'graphile-worker';
import { runExecution } from '../src/lib/server/executions/runner';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';

/** Runs one approved execution; a duplicate delivery finds it already claimed and does nothing. */
export const executions__run: Task = async (raw, helpers) => {
	const payload = parseJobPayload('executions__run', raw);
	await runExecution(payload.executionId, { signal: helpers.abortSignal });
};
