import type { Task } from 'graphile-worker';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';
import { runReplay } from '../src/lib/server/replay/run';

/** Runs one queued replay to its end; a retried job finds it claimed or finished and does nothing. */
export const replay__run: Task = async (raw) => {
	const { replayId } = parseJobPayload('replay__run', raw);
	await runReplay(replayId);
};
