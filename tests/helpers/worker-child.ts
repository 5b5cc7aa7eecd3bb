// A worker process with the app's shutdown handling and one extra slow task, for the SIGTERM test.
import { runWorkerProcess } from '../../src/lib/server/worker-process';
import { taskList } from '../../tasks/index';

await runWorkerProcess({
	taskList: {
		...taskList,
		test__slow: async (payload) => {
			const { ms } = payload as { ms: number };
			console.log('slow job started', JSON.stringify(payload));
			await new Promise((r) => setTimeout(r, ms));
			console.log('slow job finished');
		}
	}
});
