import { sql } from '../db/index';
import { enqueueJob, PRIORITY } from './enqueue';

export const SWEEP_EVERY_SECONDS = 15;

/** Queues the next executions sweep; the job key keeps exactly one queued across all processes. */
export async function scheduleSweep(): Promise<void> {
	await enqueueJob(
		sql(),
		'executions__sweep',
		{},
		{
			jobKey: 'executions__sweep',
			runAt: new Date(Date.now() + SWEEP_EVERY_SECONDS * 1000),
			maxAttempts: 5,
			priority: PRIORITY.background
		}
	);
}

/**
 * Recurring jobs. The inventory sync runs every minute in its own queue with a job key, so at
 * most one runs and one waits, however long a sync takes.
 */
export function crontab(opts: { inventorySync: boolean }): string {
	return [
		opts.inventorySync ? `* * * * * inventory__sync ?jobKey=inventory__sync&queue=inventory&priority=${PRIORITY.background}` : '',
		`17 * * * * events__prune ?jobKey=events__prune&priority=${PRIORITY.background}`
	]
		.filter(Boolean)
		.join('\n');
}
