// A standalone worker process against the same database as the web processes: `npm run worker`.
import { existsSync } from 'node:fs';

// Settings from ./.env first (the environment wins), before any module reads them.
if (existsSync('.env')) process.loadEnvFile('.env');
const { runWorkerProcess } = await import('../src/lib/server/worker-process');
const { taskList, preloadTasks } = await import('../tasks/index');
await runWorkerProcess({ taskList, preloadTasks });
