// Migration and placement against a 3-node cluster of SSH doubles and the scripted model: a CT
// moves between nodes from one approval (the read-back shows it on the target, the inventory
// follows), the pre-check refuses what Proxmox would fail on (target down, memory, storage, a
// running VM offline, local disks online), before approval and again right before the run;
// new ids come from the cluster; suggest_node names a node and why.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { resetEnvCache } from '../../src/lib/server/env';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { startScriptedLlm, type ScriptedLlm } from '../doubles/llm/server';
import { connectTo, execOn } from '../doubles/proxmox/client';
import { startProxmoxCluster, type ProxmoxCluster } from '../doubles/proxmox/cluster';
import { setNodeIn, writeVms } from '../doubles/proxmox/state';
import { useTestDatabase } from '../helpers/db';
import { addHost, decide, newOperator, newSession, useHub } from '../helpers/executions';

useTestDatabase();
useHub();

let cluster: ProxmoxCluster;
let llm: ScriptedLlm;
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	llm = await startScriptedLlm();
	Object.assign(process.env, { OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 't', NOMOS_MODEL: 'scripted' });
	resetEnvCache();
	cluster = await startProxmoxCluster({
		delayMs: 1,
		members: [
			{
				name: 'pve1',
				seed: [
					{ vmid: 100, hostname: 'dns', status: 'running', memory: 512 },
					{ vmid: 101, hostname: 'caddy', status: 'running', memory: 1024 },
					{ vmid: 102, hostname: 'db', status: 'running', memory: 2048 }
				],
				vms: [{ vmid: 200, name: 'haos', status: 'running', memory: 4096, diskGb: 32 }]
			},
			{ name: 'pve2' },
			{ name: 'pve3' }
		]
	});
	// pve3 is small: 4 GiB (1.5 GiB free) and no local-lvm.
	await setNodeIn(cluster.member('pve3').stateDir, { maxmemGb: 4, storages: ['local'] });
	for (const m of cluster.members) await addHost(m);
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'migrate');
	await syncAllHosts();
});
beforeEach(() => llm.reset());
afterAll(async () => {
	await cluster?.close();
	await llm?.close();
});

const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;
const refusal = async (input: Record<string, unknown>) => {
	const r = await requestExecution(sessionId, input);
	if (!('error' in r)) throw new Error(`expected a refusal, got execution ${r.execution.id} (${r.execution.status})`);
	return r.error;
};
const migrations = async (node: string) => (await cluster.member(node).argvLog()).filter((a) => a[1] === 'migrate');
const say = (text: string) =>
	sql().begin((tx) => insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' }));

describe('the pre-check refuses before the operator is asked', () => {
	it('storage missing and not enough memory on the target, each named', async () => {
		expect(await refusal({ target: 'lxc:pve1/101', action: 'pct_migrate', params: { node: 'pve3' }, reason: 'x' })).toBe(
			'pct_migrate to pve3 refused by the pre-check: storage local-lvm (rootfs) does not exist on pve3'
		);
		expect(await refusal({ target: 'lxc:pve1/102', action: 'pct_migrate', params: { node: 'pve3' }, reason: 'x' })).toBe(
			'pct_migrate to pve3 refused by the pre-check: not enough memory on pve3: 1.5 GiB free, CT 102 needs 2.0 GiB; storage local-lvm (rootfs) does not exist on pve3'
		);
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from executions where action = 'pct_migrate'`;
		expect(n).toBe(0);
	});

	it("a running VM on the target takes its memory: a CT that would fit otherwise does not; a VM's own memory is checked too", async () => {
		await writeVms(cluster.member('pve3').stateDir, [{ vmid: 210, name: 'pbs', status: 'running', memory: 1024 }]);
		try {
			// pve3: 4 GiB, 2.5 used by the node and 1 by the VM: 0.5 GiB free.
			expect(await refusal({ target: 'lxc:pve1/101', action: 'pct_migrate', params: { node: 'pve3' }, reason: 'x' })).toBe(
				'pct_migrate to pve3 refused by the pre-check: not enough memory on pve3: 0.5 GiB free, CT 101 needs 1.0 GiB; storage local-lvm (rootfs) does not exist on pve3'
			);
			expect(
				await refusal({ target: 'pve1', action: 'qm_migrate', params: { vmid: 200, node: 'pve3', online: true, withLocalDisks: true }, reason: 'x' })
			).toContain('not enough memory on pve3: 0.5 GiB free, VM 200 needs 4.0 GiB');
		} finally {
			await rm(join(cluster.member('pve3').stateDir, 'vms', '210.json'));
		}
	});

	it('a target that is down, and a node that is not in the cluster', async () => {
		await cluster.setDown('pve3', true);
		try {
			expect(await refusal({ target: 'lxc:pve1/101', action: 'pct_migrate', params: { node: 'pve3' }, reason: 'x' })).toBe(
				'pct_migrate to pve3 refused by the pre-check: node pve3 is offline'
			);
		} finally {
			await cluster.setDown('pve3', false);
		}
		expect(await refusal({ target: 'lxc:pve1/101', action: 'pct_migrate', params: { node: 'pve9' }, reason: 'x' })).toBe(
			'pct_migrate to pve9 refused by the pre-check: pve9 is not a node of this cluster (nodes: pve1, pve2, pve3)'
		);
	});

	it('a running VM moves online only, and with local disks only when told', async () => {
		expect(await refusal({ target: 'pve1', action: 'qm_migrate', params: { vmid: 200, node: 'pve2' }, reason: 'x' })).toContain(
			'VM 200 is running: a running VM migrates online (online: true)'
		);
		expect(await refusal({ target: 'pve1', action: 'qm_migrate', params: { vmid: 200, node: 'pve2', online: true }, reason: 'x' })).toBe(
			'qm_migrate to pve2 refused by the pre-check: VM 200 has local disks (scsi0 on local-lvm): online migration copies them only with withLocalDisks: true'
		);
		expect(await migrations('pve1')).toEqual([]);
	});

	it('the double fails the same way when asked directly (as qm and pct do)', async () => {
		const c = await connectTo(cluster.member('pve1'));
		try {
			// The API call's checks die: the message on stderr (qemu-server API2/Qemu.pm, pve-container API2/LXC.pm migrate_vm).
			expect(await execOn(c, 'qm migrate 200 pve1')).toMatchObject({ code: 255, stderr: expect.stringContaining('target: target is local node.') });
			expect(await execOn(c, 'qm migrate 200 pve2')).toMatchObject({ code: 255, stderr: "can't migrate running VM without --online\n" });
			expect(await execOn(c, 'qm migrate 200 pve3 --online 1')).toMatchObject({ code: 255, stderr: "storage 'local-lvm' is not available on node 'pve3'\n" });
			expect(await execOn(c, 'pct migrate 101 pve2')).toMatchObject({ code: 255, stderr: "can't migrate running container without --online or --restart\n" });
			expect(await execOn(c, 'pct migrate 101 pve2 --restart 1 --with-local-disks 1')).toMatchObject({
				code: 255,
				stderr: expect.stringContaining('with-local-disks: property is not defined in schema and the schema does not allow additional properties')
			});
			// The migration task's errors are in its log on stdout (`<date> ERROR: …`, AbstractMigrate.pm);
			// stderr gets only the task's end, "migration aborted".
			const local = await execOn(c, 'qm migrate 200 pve2 --online 1');
			expect(local).toMatchObject({ code: 255, stderr: 'migration aborted\n' });
			expect(local.stdout).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d starting migration of VM 200 to node 'pve2' \(10\.10\.10\.\d+\)$/m);
			expect(local.stdout).toContain(
				"can't migrate local disk 'local-lvm:vm-200-disk-0': can't live migrate attached local disks without with-local-disks option"
			);
			expect(local.stdout).toMatch(/ ERROR: migration aborted \(duration \d\d:\d\d:\d\d\): can't migrate VM - check log$/m);
			const storage = await execOn(c, 'pct migrate 101 pve3 --restart 1');
			expect(storage).toMatchObject({ code: 255, stderr: 'migration aborted\n' });
			expect(storage.stdout).toMatch(/ ERROR: migration aborted \(duration \d\d:\d\d:\d\d\): storage 'local-lvm' is not available on node 'pve3'$/m);
			await cluster.setDown('pve2', true);
			expect((await execOn(c, 'pct migrate 101 pve2 --restart 1')).stdout).toContain(
				"ERROR: migration aborted (duration 00:00:01): Can't connect to destination address using public key"
			);
			await cluster.setDown('pve2', false);
		} finally {
			c.end();
		}
		expect(await cluster.holderOf(101)).toBe('pve1');
	});
});

describe('a CT moves from one approval', () => {
	it('the agent asks, the operator approves, pct migrate runs on pve1, the cluster lists it on pve2, the inventory follows', async () => {
		await say('move caddy to pve2');
		llm.push(
			{
				toolCalls: [{ name: 'request_execution', args: { target: 'lxc:pve1/101', action: 'pct_migrate', params: { node: 'pve2' }, reason: 'operator asked' } }]
			},
			{ text: 'Waiting for your approval.' }
		);
		expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');
		const [row] = await sql()<{ id: string }[]>`select id from executions where action = 'pct_migrate' order by created_at desc limit 1`;
		const e = await load(row.id);
		expect(e).toMatchObject({ status: 'awaiting_approval', target: 'lxc:pve1/101', classification: 'config_mutation' });
		expect(e.commandPreview).toBe(
			`'pct' 'migrate' '101' 'pve2' '--restart' '1' '--timeout' '180'\n'pvesh' 'get' '/cluster/resources' '--type' 'vm' '--output-format' 'json'`
		);

		expect((await decide(e.id, operatorId, 'approved')).ok).toBe(true);
		const [before1, before2] = [(await cluster.member('pve1').argvLog()).length, (await cluster.member('pve2').argvLog()).length];
		await runExecution(e.id);
		const done = await load(e.id);
		expect(done.status, done.error ?? '').toBe('succeeded');
		expect(done.result).toBe('CT 101 migrated to pve2');
		expect(done.steps.map((s) => [s.label, s.exitCode, s.verified ?? null])).toEqual([
			['pct migrate → pve2', 0, null],
			['verify: lxc/101 on pve2', 0, true]
		]);
		expect(done.steps[0].stdoutTail).toContain("starting migration of CT 101 to node 'pve2'");
		expect(await cluster.holderOf(101)).toBe('pve2');
		expect((await cluster.member('pve2').containers()).find((c) => c.vmid === 101)).toMatchObject({ hostname: 'caddy', status: 'running' });
		// The run: reads and the one migrate on pve1 (the node holding the CT); nothing on pve2.
		const ran = (await cluster.member('pve1').argvLog()).slice(before1);
		expect(ran.filter((a) => a[0] !== 'pvesh' && a[0] !== 'pvecm')).toEqual([
			['pct', 'config', '101'],
			['pct', 'migrate', '101', 'pve2', '--restart', '1', '--timeout', '180']
		]);
		expect((await cluster.member('pve2').argvLog()).slice(before2)).toEqual([]);

		// The continuation reads the CT back on both nodes before the agent looks.
		llm.push({ text: 'caddy runs on pve2 now.' });
		expect(await continueSession(sessionId)).toBe('turn');
		const rows = await sql()<{ external_id: string; host_name: string }[]>`select external_id, host_name from entities where kind = 'lxc' and name = 'caddy'`;
		expect(rows).toEqual([{ external_id: 'pve2/101', host_name: 'pve2' }]);
	});

	it('a target that went down between approval and run: not run, the pre-check says why', async () => {
		const r = await requestExecution(sessionId, { target: 'lxc:pve1/100', action: 'pct_migrate', params: { node: 'pve2' }, reason: 'x' });
		if ('error' in r) throw new Error(r.error);
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await cluster.setDown('pve2', true);
		try {
			await runExecution(r.execution.id);
		} finally {
			await cluster.setDown('pve2', false);
		}
		const e = await load(r.execution.id);
		expect(e.status).toBe('failed');
		expect(e.error).toBe('not run: the migration pre-check failed: node pve2 is offline');
		expect(e.steps).toEqual([]);
		expect(await cluster.holderOf(100)).toBe('pve1');
	});
});

describe('a migration task that fails', () => {
	it('is reported with the task\'s own error from its log, not just "migration aborted"', async () => {
		const r = await requestExecution(sessionId, { target: 'lxc:pve1/100', action: 'pct_migrate', params: { node: 'pve2' }, reason: 'x' });
		if ('error' in r) throw new Error(r.error);
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		// A backup took the lock after the approval: the pre-check does not read locks, the task does
		// (pve-container stable-bookworm src/PVE/LXC/Migrate.pm prepare: `PVE::LXC::Config->check_lock($conf);`).
		await cluster.member('pve1').patchCt(100, { lock: 'backup' });
		try {
			await runExecution(r.execution.id);
		} finally {
			await cluster.member('pve1').patchCt(100, { lock: undefined });
		}
		const e = await load(r.execution.id);
		expect(e.status).toBe('failed');
		expect(e.steps[0]).toMatchObject({ exitCode: 255, stderrTail: 'migration aborted\n' });
		expect(e.error).toMatch(
			/^pct migrate → pve2 exited with 255: migration aborted \(duration \d\d:\d\d:\d\d\): CT is locked \(backup\) \(migration aborted\)$/
		);
		expect(await cluster.holderOf(100)).toBe('pve1');
	});
});

describe('a VM moves online with its local disks', () => {
	it('qm migrate --online --with-local-disks from one approval; the cluster lists it on pve2, running', async () => {
		const r = await requestExecution(sessionId, {
			target: 'pve1',
			action: 'qm_migrate',
			params: { vmid: 200, node: 'pve2', online: true, withLocalDisks: true },
			reason: 'x'
		});
		if ('error' in r) throw new Error(r.error);
		expect(r.execution.commandPreview.split('\n')[0]).toBe(`'qm' 'migrate' '200' 'pve2' '--online' '1' '--with-local-disks' '1'`);
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(r.execution.id);
		const e = await load(r.execution.id);
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.result).toBe('VM 200 migrated to pve2 (online)');
		// No snapshot before: an lvmthin snapshot would stop the move.
		expect(e.steps.map((s) => s.label)).toEqual(['qm migrate → pve2', 'verify: qemu/200 on pve2']);
		expect((await cluster.member('pve2').vms()).find((v) => v.vmid === 200)).toMatchObject({ name: 'haos', status: 'running' });
		expect(await cluster.holderOf(200)).toBe('pve2');

		// The continuation reads it back at once (one /cluster/resources on pve1), filed under pve2 now.
		llm.push({ text: 'haos runs on pve2 now.' });
		const before = (await cluster.member('pve1').argvLog()).length;
		expect(await continueSession(sessionId)).toBe('turn');
		expect((await cluster.member('pve1').argvLog()).slice(before)).toEqual([['pvesh', 'get', '/cluster/resources', '--output-format', 'json']]);
		const rows = await sql()<{ external_id: string; host_name: string; status: string }[]>`
			select external_id, host_name, attributes->>'status' as status from entities where kind = 'qemu' and name = 'haos'`;
		expect(rows).toEqual([{ external_id: 'pve2/200', host_name: 'pve2', status: 'running' }]);
	});
});

describe('ids and placement across the cluster', () => {
	it("'auto' takes the cluster's next free id (not one another node holds)", async () => {
		const r = await requestExecution(sessionId, {
			target: 'pve3',
			action: 'pct_create',
			params: { hostname: 'web', template: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', storage: 'local' },
			reason: 'x'
		});
		if ('error' in r) throw new Error(r.error);
		// 100–102 are CTs on pve1 and pve2; pve3 holds nothing of its own.
		expect(r.execution.params.vmid).toBe('103');
	});

	it("get_state_snapshot's placement names the node with the most free memory, and why; the migrate actions are described", async () => {
		await syncAllHosts();
		await say('where should a new container go?');
		llm.push({ toolCalls: [{ name: 'get_state_snapshot', args: {} }] }, { text: 'pve2.' });
		expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');
		const first = llm.requests.at(-2)!.body as { tools: { function: { name: string; description: string } }[] };
		expect(first.tools.find((t) => t.function.name === 'request_execution')!.function.description).toContain('pct_migrate(node, timeoutS?)');
		const messages = (llm.requests.at(-1)!.body as { messages: { role: string; content: string }[] }).messages;
		const snapshot = JSON.parse(messages.filter((m) => m.role === 'tool').at(-1)!.content) as { placement: { node: string; reason: string; nodes: string[] } };
		// pve2 holds the running 4 GiB VM now (and caddy): pve1 has more free.
		expect(snapshot.placement.node).toBe('pve1');
		expect(snapshot.placement.reason).toMatch(
			/^pve1: the most free memory among the nodes online \(\d+\.\d GiB free of 32\.0, CPU [\d.]+% of 8\); next: pve2 \d+\.\d GiB, pve3 1\.5 GiB$/
		);
		expect(snapshot.placement.nodes[2]).toMatch(/^pve3 online: 1536 MiB free of 4096, CPU [\d.]+% of 8; storage local \d+G$/);
	});
});
