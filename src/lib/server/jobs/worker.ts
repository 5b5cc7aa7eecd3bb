import pg from 'pg';
import { run, runMigrations, type Runner, type TaskList } from 'graphile-worker';

export interface WorkerHandle {
	stop(): Promise<void>;
}

/** Installs or upgrades graphile-worker's schema so any process can add jobs with SQL. */
export async function migrateWorkerSchema(url: string): Promise<void> {
	const pool = new pg.Pool({ connectionString: url, max: 1 });
	pool.on('error', () => undefined);
	pool.on('connect', (client) => client.on('error', () => undefined));
	try {
		await runMigrations({ pgPool: pool });
	} finally {
		await pool.end();
	}
}

/**
 * Runs graphile-worker with Nomos's tasks. Signal handling is ours (see `stop`), and job
 * outcomes are written without batching so a shutdown mid-job never leaves a job locked.
 */
export async function startWorker(opts: {
	url: string;
	taskList: TaskList;
	concurrency: number;
	/** graphile-worker crontab lines, e.g. `* * * * * inventory__sync`. */
	crontab?: string;
}): Promise<WorkerHandle> {
	const pool = new pg.Pool({ connectionString: opts.url, max: opts.concurrency + 2 });
	pool.on('error', (e) => console.error(`[nomos] worker pool: ${e.message}`));
	pool.on('connect', (client) => client.on('error', (e) => console.error(`[nomos] worker connection: ${e.message}`)));
	const runner: Runner = await run({
		pgPool: pool,
		taskList: opts.taskList,
		concurrency: opts.concurrency,
		noHandleSignals: true,
		pollInterval: 2000,
		...(opts.crontab ? { crontab: opts.crontab } : { parsedCronItems: [] }),
		preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0, gracefulShutdownAbortTimeout: 10_000 } }
	});
	let stopping: Promise<void> | undefined;
	return {
		stop() {
			stopping ??= (async () => {
				await runner.stop();
				await runner.promise.catch(() => undefined);
				await pool.end();
			})();
			return stopping;
		}
	};
}

