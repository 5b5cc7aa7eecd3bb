// A worker process as `npm run worker` starts it, except that its executions__run job waits
// SLOW_RUN_START_MS after it was taken before the real task claims the execution: the window in
// which a worker can die holding the job of an approved execution it has not started.
import type { Task } from 'graphile-worker';
import { runWorkerProcess } from '../../src/lib/server/worker-process';
import { taskList } from '../../tasks/index';

const delay = Number(process.env.SLOW_RUN_START_MS ?? '0');
const run = taskList.executions__run as Task;

await runWorkerProcess({
	taskList: {
		...taskList,
		executions__run: async (payload, helpers) => {
			console.log('run job taken', JSON.stringify(payload));
			await new Promise((r) => setTimeout(r, delay));
			return run(payload, helpers);
		}
	}
});
