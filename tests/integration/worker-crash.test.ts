// A worker killed with SIGKILL mid-execution: its life lock is gone with its connection, so the
// next recovery pass of any live process marks the execution interrupted ("worker lost", it may
// have partly run) — no lease to wait out — and stops the remote command, which (as under sshd)
// outlived the worker's connection, before the agent is told.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { requestExecution } from '../../src/lib/server/executions/request';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { sweep } from '../../src/lib/server/executions/lifecycle';
import { runExecution } from '../../src/lib/server/executions/runner';
import { recoverDeadProcesses } from '../../src/lib/server/recovery/dead-processes';
import { listDeadProcesses } from '../../src/lib/server/db/queries/workers';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { DEBIAN, addHost, alive, decide, jobsFor, newOperator, newSession, useHub, waitUntil } from '../helpers/executions';
import { startWorkerChild } from '../helpers/spawn';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();
useHub();

let pve: ProxmoxDouble;

beforeAll(async () => {
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] });
	await addHost(pve);
	await pve.setFault('create', 'hang');
});

afterAll(async () => {
	await pve?.close();
});

describe('worker crash', () => {
	it(
		'marks a running execution interrupted (worker lost) after the worker is killed with SIGKILL, never failed',
		async () => {
			const operatorId = await newOperator();
			const sessionId = await newSession(operatorId);
			const r = await requestExecution(sessionId, { target: 'strong', action: 'pct_create', params: { hostname: 'crashy', template: DEBIAN }, reason: 'r' });
			if ('error' in r) throw new Error(r.error);
			const id = r.execution.id;
			expect((await decide(id, operatorId, 'approved')).ok).toBe(true);

			const { child, log, exited } = startWorkerChild(dbUrl());
			try {
				// The child's worker picks up the executions__run job and the fake `pct create` hangs.
				await waitUntil(async () => (await getExecution(sql(), id))?.status === 'running', `the worker to claim the execution:\n${log.out}`, {
					timeoutMs: 30_000,
					intervalMs: 100
				});
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
				const [r] = await recoverDeadProcesses(sql());
				expect(r.interrupted).toEqual([id]);
				// Recovery stopped it on the host and read the target back.
				expect(alive(hung.pid)).toBe(false);
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
			} finally {
				child.kill('SIGKILL');
			}
		},
		scaled(90_000)
	);
});
