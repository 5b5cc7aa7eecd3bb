// graphile-worker 0.17 locks a job with its pool's id (`pool-…`, the `locked_by` of getJobs),
// not with the ids of the pool's workers (`worker-…`). A process that announces only its
// workers' ids looks, to releaseDeadWorkerLocks, like the holder of nothing: every job it runs
// for longer than WORKER_DEAD_AFTER_S is "released" while it still runs, taken again by another
// process (a second sync, a second sweep at once), and its outcome is then lost or doubled.
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { enqueueJob } from '../../src/lib/server/jobs/enqueue';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import { claimDeadProcess, LIFE_LOCK_SPACE, listDeadProcesses, releaseDeadWorkerLocks } from '../../src/lib/server/db/queries/workers';
import { useTestDatabase } from '../helpers/db';
import { waitUntil } from '../helpers/executions';
import { exitWithin, startWorkerChild } from '../helpers/spawn';
import type { ChildProcess } from 'node:child_process';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();
let worker: WorkerHandle | undefined;
let finish = () => undefined as void;
const children: ChildProcess[] = [];

afterAll(async () => {
	finish();
	await worker?.stop();
	for (const c of children) c.kill('SIGKILL');
});

describe('a live worker running a long job', () => {
	it('is not taken for dead: its lock stays when the job runs past WORKER_DEAD_AFTER_S', async () => {
		const held = new Promise<void>((r) => (finish = r));
		worker = await startWorker({ url: dbUrl(), concurrency: 1, taskList: { test__long: () => held } });
		await enqueueJob(sql(), 'test__long', {}, { queueName: 'long' });
		const [job] = await waitUntil(async () => {
			const rows = await sql()<
				{ id: string; lockedBy: string }[]
			>`select id::text, locked_by as "lockedBy" from graphile_worker._private_jobs where locked_by is not null`;
			return rows.length ? rows : null;
		}, 'the worker to take the job');
		// The job has run for two minutes (aged instead of waited for); the process beats.
		await sql()`update graphile_worker._private_jobs set locked_at = locked_at - interval '2 minutes' where id = ${job.id}::bigint`;
		await sql()`update graphile_worker._private_job_queues set locked_at = locked_at - interval '2 minutes' where locked_by is not null`;
		expect(await releaseDeadWorkerLocks(sql())).toEqual([]);
		const [after] = await sql()<{ lockedBy: string | null }[]>`select locked_by as "lockedBy" from graphile_worker._private_jobs where id = ${job.id}::bigint`;
		expect(after.lockedBy).toBe(job.lockedBy);
		const [queue] = await sql()<
			{ lockedBy: string | null }[]
		>`select locked_by as "lockedBy" from graphile_worker._private_job_queues where queue_name = 'long'`;
		expect(queue.lockedBy).toBe(job.lockedBy);
	});
});

// A worker's life lock lives on one connection of its own. When that connection drops while the
// process lives (pg_terminate_backend here; a network blip or a restarted pooler in life), every
// other process sees the lock free and may recover the work in flight at once. The process must
// then never be both: doing its work and registered as someone else's to recover.
type Registered = { id: string; lockId: number };
const registered = () => sql()<Registered[]>`select id, lock_id as "lockId" from worker_processes order by started_at`;
/** The backend holding a life lock, if any. */
async function lifeHolder(lockId: number): Promise<number | null> {
	const [row] = await sql()<{ pid: number }[]>`
		select pid from pg_locks where locktype = 'advisory' and granted and classid = ${LIFE_LOCK_SPACE}::int::oid and objid = ${lockId}::bigint::oid and objsubid = 2`;
	return row?.pid ?? null;
}

describe('a worker whose life-lock connection drops', () => {
	it('takes the same lock again when nobody took it for dead: one registration, same id, its job still its own', async () => {
		finish();
		await worker?.stop();
		await sql()`delete from graphile_worker._private_jobs`;
		await sql()`delete from worker_processes`;
		const held = new Promise<void>((r) => (finish = r));
		let lost = 0;
		worker = await startWorker({ url: dbUrl(), concurrency: 1, taskList: { test__long: () => held }, onLifeLost: () => lost++ });
		await enqueueJob(sql(), 'test__long', {}, { queueName: 'long' });
		const [job] = await waitUntil(async () => {
			const rows = await sql()<
				{ id: string; lockedBy: string }[]
			>`select id::text, locked_by as "lockedBy" from graphile_worker._private_jobs where locked_by is not null`;
			return rows.length ? rows : null;
		}, 'the worker to take the job');
		const [me] = await registered();
		const before = (await lifeHolder(me.lockId))!;
		await sql()`select pg_terminate_backend(${before})`;
		const after = await waitUntil(async () => {
			const pid = await lifeHolder(me.lockId);
			return pid !== null && pid !== before ? pid : null;
		}, 'the worker to hold its life lock again');
		expect(after).not.toBe(before);
		expect(await registered()).toEqual([me]);
		expect(await listDeadProcesses(sql())).toEqual([]);
		expect(lost).toBe(0);
		const [still] = await sql()<{ lockedBy: string | null }[]>`select locked_by as "lockedBy" from graphile_worker._private_jobs where id = ${job.id}::bigint`;
		expect(still.lockedBy).toBe(job.lockedBy);
	});

	it(
		'exits when another process recovered it first (no second identity, none of its work done twice)',
		async () => {
			finish();
			await worker?.stop();
			worker = undefined;
			await sql()`delete from worker_processes`;
			const w = startWorkerChild(dbUrl());
			children.push(w.child);
			const [me] = await waitUntil(
				async () => (w.log.out.includes('worker ready') ? registered() : null),
				() => `the worker to be ready:\n${w.log.out}`,
				{
					timeoutMs: 60_000,
					intervalMs: 100
				}
			);
			const before = (await lifeHolder(me.lockId))!;
			// A recovering process queues for the lock before the connection drops, so it is first
			// to get it when the backend is gone (as when its 2-s check wins the race), and claims.
			const claim = sql().begin(async (tx) => {
				await tx`select pg_advisory_xact_lock(${LIFE_LOCK_SPACE}, ${me.lockId})`;
				return claimDeadProcess(tx, me);
			});
			await waitUntil(async () => {
				const [row] = await sql()<{ n: number }[]>`
				select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted and classid = ${LIFE_LOCK_SPACE}::int::oid and objid = ${me.lockId}::bigint::oid`;
				return row.n === 1;
			}, 'the recovery to wait for the lock');
			await sql()`select pg_terminate_backend(${before})`;
			expect(await claim).toMatchObject({ id: me.id });
			expect(await exitWithin(w, 20_000, 'the worker to leave')).toEqual({ code: 1, signal: null });
			expect(w.log.out).toContain('another process recovered its work: exiting');
			expect(await registered()).toEqual([]);
			expect(await lifeHolder(me.lockId)).toBeNull();
		},
		scaled(90_000)
	);
});
