// "After the soak, seven inventory__sync jobs sat at attempts 25 of 25 with no error recorded."
// How: the minute's cron (or a start's first sync) adds `inventory__sync` with its job key while
// a sync runs; graphile-worker then takes the key off the running copy and sets its attempts to
// max_attempts ("this copy must not retry: the new one does its work"). When the process running
// that copy is SIGKILLed, releasing the dead worker's locks leaves it unlocked at 25/25 with no
// error: never run again, never removed, never explained. A copy lost without being superseded
// comes back with an attempt spent and nothing said about it.
// Here: real worker processes, the fake `pvesh` hanging so that the sync is mid-read, SIGKILL,
// and either of the two that account for a dead worker's jobs: the sweeper (the
// executions__sweep task, for locks that went stale) or the recovery of a process whose life
// lock is gone (recovery/dead-processes.ts, every 2 s in every process).
import type { JobHelpers } from 'graphile-worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { PRIORITY } from '../../src/lib/server/jobs/enqueue';
import { executions__sweep } from '../../tasks/executions__sweep';
import { recoverDeadProcesses } from '../../src/lib/server/recovery/dead-processes';
import { alive, waitUntil } from '../helpers/executions';
import { STRONG_CADDY, useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { pve, spawnWorker } = useStage({ hub: false, spawned: true, sync: false, hosts: [STRONG_CADDY] });
beforeAll(() => pve.setFault('hang', 'pvesh'));

type SyncJob = { id: string; key: string | null; attempts: number; maxAttempts: number; locked: boolean; lastError: string | null };

const syncJobs = () => sql()<SyncJob[]>`
	select j.id::text as id, j.key, j.attempts, j.max_attempts as "maxAttempts", j.locked_at is not null as locked, j.last_error as "lastError"
	from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
	where t.identifier = 'inventory__sync' order by j.id`;

/** What the crontab line adds every minute (schedule.ts): same task, key, queue and priority. */
async function cronTick(): Promise<void> {
	const payload = JSON.stringify({ _cron: { ts: new Date().toISOString(), backfilled: false } });
	await sql()`select graphile_worker.add_job('inventory__sync', ${payload}::text::json,
		queue_name => 'inventory', job_key => 'inventory__sync', priority => ${PRIORITY.background}::int)`;
}

/**
 * Kills a worker process mid-sync (the fake pvesh hangs), optionally after the next cron tick
 * superseded the running copy, then lets the sweeper find the dead worker. The kill's minute is
 * simulated by ageing the locks and the heartbeat instead of waiting for it.
 */
async function killMidSync(opts: { supersede: boolean; by?: 'sweeper' | 'recovery' }): Promise<void> {
	const w = spawnWorker();
	await waitUntil(
		async () => (await syncJobs()).some((j) => j.locked),
		() => `a worker to take the sync:\n${w.log.out}`,
		{ timeoutMs: 30_000, intervalMs: 50 }
	);
	await waitUntil(async () => (await pve.hangs()).some((h) => h.tool === 'pvesh' && alive(h.pid)), 'the sync to be mid-read', { timeoutMs: 15_000 }).catch(
		(e: Error) => {
			throw new Error(`${e.message}:\n${w.log.out}`);
		}
	);
	if (opts.supersede) {
		await cronTick();
		const [running] = (await syncJobs()).filter((j) => j.locked);
		// graphile-worker's own doing: the running copy lost its key and its remaining attempts.
		expect(running).toMatchObject({ key: null, attempts: 25, maxAttempts: 25 });
	}
	w.child.kill('SIGKILL');
	expect((await w.exited).signal).toBe('SIGKILL');
	// As under sshd, the hung reads outlive the dead worker's connection: end them, as a host would time
	// them out. The sync reads on two channels at once (the nodes' CTs and /cluster/resources), so a
	// second pvesh may still be starting when the worker dies: each look kills what hangs by then,
	// until every command the double was sent has ended.
	await waitUntil(
		async () => {
			for (const h of await pve.hangs()) if (alive(h.pid)) process.kill(h.pid, 'SIGKILL');
			return pve.execTimes().every((t) => t.endedAt !== null);
		},
		'the hung pvesh reads to end',
		{ timeoutMs: 10_000 }
	);
	if (opts.by === 'recovery') {
		// Its life lock went with its connection: recovered at once, no lock has to go stale.
		await waitUntil(async () => (await recoverDeadProcesses(sql())).length > 0, 'the dead worker to be recovered', { timeoutMs: 15_000 });
	} else {
		await sql()`update graphile_worker._private_jobs set locked_at = locked_at - interval '2 minutes' where locked_at is not null`;
		await sql()`update graphile_worker._private_job_queues set locked_at = locked_at - interval '2 minutes' where locked_at is not null`;
		await sql()`update worker_processes set beat_at = beat_at - interval '2 minutes'`;
		await executions__sweep({}, {} as JobHelpers);
	}
	expect((await syncJobs()).filter((j) => j.locked)).toEqual([]);
}

describe('an inventory sync whose worker is SIGKILLed', () => {
	it(
		'leaves no dead copy at 25/25, and a lost attempt says why',
		async () => {
			await cronTick();
			// Three kills after a tick superseded the running sync: the soak's seven, in small.
			for (let i = 0; i < 3; i++) await killMidSync({ supersede: true });
			const afterSuperseded = await syncJobs();
			expect(
				afterSuperseded.filter((j) => j.attempts >= j.maxAttempts),
				'dead copies: superseded by a newer sync, then lost with their worker'
			).toEqual([]);
			// The newest tick's job carries on with the key, untouched.
			expect(afterSuperseded).toEqual([expect.objectContaining({ key: 'inventory__sync', attempts: 0, lastError: null, locked: false })]);

			// A kill without a tick in between: the same job comes back, its spent attempt explained.
			await killMidSync({ supersede: false });
			const [lost, ...rest] = await syncJobs();
			expect(rest).toEqual([]);
			expect(lost).toMatchObject({ key: 'inventory__sync', attempts: 1, locked: false });
			expect(lost.lastError).toMatch(/worker process .*died/);
		},
		scaled(180_000)
	);

	it(
		'leaves no dead copy either when the recovery of a dead process (its life lock gone) accounts for it',
		async () => {
			await sql()`delete from graphile_worker._private_jobs`;
			await cronTick();
			// The chaos bench's two "gave up" inventory__sync: superseded, then lost with their worker.
			for (let i = 0; i < 2; i++) await killMidSync({ supersede: true, by: 'recovery' });
			const jobs = await syncJobs();
			expect(
				jobs.filter((j) => j.attempts >= j.maxAttempts),
				'superseded copies left as "gave up"'
			).toEqual([]);
			expect(jobs).toEqual([expect.objectContaining({ key: 'inventory__sync', attempts: 0, lastError: null, locked: false })]);
		},
		scaled(180_000)
	);
});
