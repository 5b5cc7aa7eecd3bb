// graphile-worker 0.17 locks a job with its pool's id (`pool-…`, the `locked_by` of getJobs),
// not with the ids of the pool's workers (`worker-…`). A process that announces only its
// workers' ids looks, to releaseDeadWorkerLocks, like the holder of nothing: every job it runs
// for longer than WORKER_DEAD_AFTER_S is "released" while it still runs, taken again by another
// process (a second sync, a second sweep at once), and its outcome is then lost or doubled.
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { enqueueJob } from '../../src/lib/server/jobs/enqueue';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import { releaseDeadWorkerLocks } from '../../src/lib/server/db/queries/workers';
import { useTestDatabase } from '../helpers/db';
import { waitUntil } from '../helpers/executions';

const dbUrl = useTestDatabase();
let worker: WorkerHandle | undefined;
let finish = () => undefined as void;

afterAll(async () => {
	finish();
	await worker?.stop();
});

describe('a live worker running a long job', () => {
	it('is not taken for dead: its lock stays when the job runs past WORKER_DEAD_AFTER_S', async () => {
		const held = new Promise<void>((r) => (finish = r));
		worker = await startWorker({ url: dbUrl(), concurrency: 1, taskList: { test__long: () => held } });
		await enqueueJob(sql(), 'test__long', {}, { queueName: 'long' });
		const [job] = await waitUntil(async () => {
			const rows = await sql()<{ id: string; lockedBy: string }[]>`select id::text, locked_by as "lockedBy" from graphile_worker._private_jobs where locked_by is not null`;
			return rows.length ? rows : null;
		}, 'the worker to take the job');
		// The job has run for two minutes (aged instead of waited for); the process beats.
		await sql()`update graphile_worker._private_jobs set locked_at = locked_at - interval '2 minutes' where id = ${job.id}::bigint`;
		await sql()`update graphile_worker._private_job_queues set locked_at = locked_at - interval '2 minutes' where locked_by is not null`;
		expect(await releaseDeadWorkerLocks(sql())).toEqual([]);
		const [after] = await sql()<{ lockedBy: string | null }[]>`select locked_by as "lockedBy" from graphile_worker._private_jobs where id = ${job.id}::bigint`;
		expect(after.lockedBy).toBe(job.lockedBy);
		const [queue] = await sql()<{ lockedBy: string | null }[]>`select locked_by as "lockedBy" from graphile_worker._private_job_queues where queue_name = 'long'`;
		expect(queue.lockedBy).toBe(job.lockedBy);
	});
});
