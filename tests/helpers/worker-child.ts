// A worker process as `npm run worker` starts it (the app's task list and shutdown handling), with
// two things only tests use: a `test__slow` task (the SIGTERM test), and, when SLOW_RUN_START_MS
// is set, an executions__run job that waits that long after it was taken before the real task
// claims the execution (the window in which a worker can die holding the job of an approved
// execution it has not started).
import type { Task } from 'graphile-worker';
import { runWorkerProcess } from '../../src/lib/server/worker-process';
import { taskList } from '../../tasks/index';

const slowRunStart = process.env.SLOW_RUN_START_MS ? Number(process.env.SLOW_RUN_START_MS) : null;
const run = taskList.executions__run as Task;

await runWorkerProcess({
	taskList: {
		...taskList,
		...(slowRunStart === null
			? {}
			: {
					executions__run: async (payload, helpers) => {
						console.log('run job taken', JSON.stringify(payload));
						await new Promise((r) => setTimeout(r, slowRunStart));
						return run(payload, helpers);
					}
				}),
		test__slow: async (payload) => {
			const { ms } = payload as { ms: number };
			console.log('slow job started', JSON.stringify(payload));
			await new Promise((r) => setTimeout(r, ms));
			console.log('slow job finished');
		}
	}
});
