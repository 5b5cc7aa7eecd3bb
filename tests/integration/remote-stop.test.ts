// Cancel means the host stopped too. The SSH double behaves like sshd: a signal reaches only the
// top process and a closed channel stops nothing, and `create: { slow }` forks a worker that
// finishes the create later unless killed — the ghost of issue #27. A cancel must stop the
// command's whole process group on the host before the outcome is written and read the target
// back after; a host that cannot be reached is said so, and read back when it answers again.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { requestCancel } from '../../src/lib/server/executions/lifecycle';
import { TERMINAL } from '../../src/lib/types/executions';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { processRunning, startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { DEBIAN, addHost, decide, newOperator, newSession, useHub, waitUntil } from '../helpers/executions';

useTestDatabase();
useHub();

let pve: ProxmoxDouble;
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] });
	await addHost(pve);
	await syncAllHosts();
	operatorId = await newOperator('stop-admin');
	sessionId = await newSession(operatorId, 'remote stop');
});
beforeEach(async () => {
	await pve.setFault('create', null);
});
afterAll(async () => {
	await pve?.close();
});

async function approved(input: Record<string, unknown>, session = sessionId): Promise<ExecutionRow> {
	const r = await requestExecution(session, input);
	if ('error' in r) throw new Error(r.error);
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	return r.execution;
}
const load = async (id: string) => (await getExecution(sql(), id))!;
const cancel = (id: string) => sql().begin((tx) => requestCancel(tx, id, operatorId));
const createOf = (vmid: string) => ({ target: 'strong', action: 'pct_create', params: { vmid, hostname: `ct${vmid}`, template: DEBIAN }, reason: 'r' });
const taskFor = (vmid: string) => waitUntil(async () => (await pve.tasks()).find((t) => t.argv.includes(vmid)), `pct create ${vmid} to fork its worker`);

describe('cancel stops the command on the host', () => {
	it('a slow pct create: its process group is gone before the outcome is written, it never completes, and the target is read after the kill', async () => {
		await pve.setFault('create', { slow: 5_000 });
		const e = await approved(createOf('105'));
		const run = runExecution(e.id);
		const task = await taskFor('105');
		expect(await cancel(e.id)).toBe('requested');
		await waitUntil(async () => TERMINAL.includes((await load(e.id)).status), 'the outcome', { intervalMs: 5 });
		// The moment the outcome is there, neither pct nor the worker it forked runs any more: a
		// dead worker can never finish the create (the fake's own record says it did not).
		expect(await processRunning(task.pid)).toBe(false);
		expect(await processRunning(task.worker)).toBe(false);
		await run;
		expect((await pve.tasks()).find((t) => t.worker === task.worker)?.done).toBe(false);
		const done = await load(e.id);
		expect(done.status).toBe('interrupted');
		expect(done.error).toMatch(/^cancelled by the operator while pct create .* was running; it was stopped on the host and may have partly run$/);
		expect(done.leftovers).toBe('CT 105 exists on strong, stopped, locked: create');
		expect((await pve.containers()).find((c) => c.vmid === 105)).toMatchObject({ lock: 'create' });
		// The group the runner recorded is the one pct led (the wrapper exec'd into it).
		expect(done.steps[0].pgid).toBe(task.pid);
		// Read back after the kill: the stop had ended on the host before `pct status 105` arrived.
		const times = pve.execTimes();
		const stop = times.find((t) => t.command.includes('nomos-stop') && t.command.includes(`'${task.pid}'`));
		const readBack = times.findLast((t) => t.command.endsWith(`'pct' 'status' '105'`));
		expect(stop?.endedAt).toBeTypeOf('number');
		expect(readBack!.at).toBeGreaterThanOrEqual(stop!.endedAt!);
	});
});
