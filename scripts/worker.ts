// A standalone worker process against the same database as the web processes: `npm run worker`.
import { existsSync } from 'node:fs';
import { runWorkerProcess } from '../src/lib/server/worker-process';

if (existsSync('.env')) process.loadEnvFile('.env');

await runWorkerProcess();
