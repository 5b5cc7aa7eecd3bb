// A worker process exactly as `npm run worker` starts it (the app's task list), for the crash test:
// the test runs executions through it and then kills it with SIGKILL.
import { runWorkerProcess } from '../../src/lib/server/worker-process';
import { taskList } from '../../tasks/index';

await runWorkerProcess({ taskList });
