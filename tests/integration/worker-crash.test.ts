// A worker killed with SIGKILL mid-execution: its life lock is gone with its connection, so the
// next recovery pass of any live process marks the execution interrupted ("worker lost", it may
// have partly run) — no lease to wait out — and stops the remote command, which (as under sshd)
// outlived the worker's connection, before the agent is told.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { sweep } from '../../src/lib/server/executions/lifecycle';
import { runExecution } from '../../src/lib/server/executions/runner';
import { recoverDeadProcesses } from '../../src/lib/server/recovery/dead-processes';
import { listDeadProcesses } from '../../src/lib/server/db/queries/workers';
import { DEBIAN, alive, requestApproved, jobsFor, newOperator, newSession, waitUntil } from '../helpers/executions';
import { STRONG_CADDY, useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { pve, spawnWorker } = useStage({ spawned: true, sync: false, hosts: [STRONG_CADDY] });
beforeAll(() => pve.setFault('create', 'hang'));

describe('worker crash', () => {
	it(
		'marks a running execution interrupted (worker lost) after the worker is killed with SIGKILL, never failed',
		async () => {
			const operatorId = await newOperator();
			const sessionId = await newSession(operatorId);
			const { id } = await requestApproved(sessionId, operatorId, {
				target: 'strong',
				action: 'pct_create',
				params: { hostname: 'crashy', template: DEBIAN },
				reason: 'r'
			});

			const { child, log, exited } = spawnWorker();
			// The child's worker picks up the executions__run job and the fake `pct create` hangs.
			await waitUntil(
				async () => (await getExecution(sql(), id))?.status === 'running',
				() => `the worker to claim the execution:\n${log.out}`,
				{
					timeoutMs: 30_000,
					intervalMs: 100
				}
			);
			const [hung] = await waitUntil(
				async () => {
					const h = await pve.hangs();
					return h.length ? h : null;
				},
				'pct create to hang',
				{ timeoutMs: 15_000 }
			);
			const running = (await getExecution(sql(), id))!;
			expect(running.steps).toHaveLength(1);
			expect(log.out).toContain('worker ready');

			child.kill('SIGKILL');
			expect((await exited).signal).toBe('SIGKILL');
			const killedAt = Date.now();

			// As under sshd, the command outlives the worker's connection.
			expect(alive(hung.pid)).toBe(true);

			// A recovery pass as every live process runs one (every 2 s): the dead process is seen
			// as soon as Postgres has closed its connection, not after a lease or heartbeat.
			await waitUntil(async () => (await listDeadProcesses(sql())).length === 1, 'Postgres to notice the closed connection', {
				timeoutMs: 10_000,
				intervalMs: 50
			});
			expect((await getExecution(sql(), id))!.status).toBe('running');
			const [recovered] = await recoverDeadProcesses(sql());
			expect(recovered.interrupted).toEqual([id]);
			// Recovery stopped it on the host and read the target back. (The kill is sent; on a loaded
			// machine the process may take a moment to be gone.)
			await waitUntil(async () => !alive(hung.pid), `the hung pct create (${hung.pid}) to be stopped`, { timeoutMs: 10_000, intervalMs: 50 });
			expect((await getExecution(sql(), id))!.leftovers).toMatch(/^CT \d+ exists on strong, stopped, locked: create$/);
			// One process recovers it: a second pass finds nothing.
			expect(await recoverDeadProcesses(sql())).toEqual([]);
			expect(await sweep(sql())).toMatchObject({ lost: 0 });
			console.log(`[worker-crash] interrupted ${Date.now() - killedAt} ms after the kill`);

			const e = (await getExecution(sql(), id))!;
			expect(e.status).toBe('interrupted');
			expect(e.error).toMatch(/^worker lost: .*it may have partly run/);
			expect(e.finishedAt).not.toBeNull();
			const [{ lease }] = await sql()<{ lease: Date | null }[]>`select lease_until as lease from executions where id = ${id}`;
			expect(lease).toBeNull();
			// The session hears about it; nothing will run it again.
			expect((await jobsFor(id)).map((j) => j.task).sort()).toEqual(['agent__continue_session', 'executions__run']);
			const before = (await pve.argvLog()).length;
			await runExecution(id);
			expect((await pve.argvLog()).length).toBe(before);
			expect((await pve.argvLog()).filter((a) => a[0] === 'pct' && a[1] === 'create')).toHaveLength(1);
		},
		scaled(90_000)
	);
});
