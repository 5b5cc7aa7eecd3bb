// A 3-node cluster of SSH doubles behind Nomos: the sync sees every node and guest (CTs and VMs),
// a command goes to the node that holds its guest, a guest moved behind Nomos's back is refused
// with its new node named (at request time and again right before the run), and a node that is
// down or out of quorum is reported and gets no command.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getStateSnapshotTool } from '../../src/lib/server/agent/tools/get-state-snapshot';
import { listEntitiesTool } from '../../src/lib/server/agent/tools/list-entities';
import { blastRadius } from '../../src/lib/server/db/queries/blast-radius';
import { getEntity, listEntities } from '../../src/lib/server/db/queries/entities';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { resetEnvCache } from '../../src/lib/server/env';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { startProxmoxCluster, type ProxmoxCluster } from '../doubles/proxmox/cluster';
import { useTestDatabase } from '../helpers/db';
import { addHost, decide, newOperator, newSession, useHub } from '../helpers/executions';

useTestDatabase();
useHub();

let cluster: ProxmoxCluster;
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	Object.assign(process.env, { NOMOS_SNAPSHOT_BEFORE: 'off', NOMOS_HEALTH_AFTER: 'off' });
	resetEnvCache();
	cluster = await startProxmoxCluster({
		delayMs: 1,
		members: [
			{ name: 'pve1', seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] },
			{
				name: 'pve2',
				seed: [
					{ vmid: 101, hostname: 'db', status: 'running' },
					{ vmid: 102, hostname: 'web', status: 'running' }
				],
				vms: [{ vmid: 200, name: 'haos', status: 'running' }]
			},
			{ name: 'pve3', vms: [{ vmid: 9000, name: 'debian-tpl', template: 1 }] }
		]
	});
	// pve3 has no host entry: Nomos sees it through the others, and sends it nothing.
	await addHost(cluster.member('pve1'));
	await addHost(cluster.member('pve2'));
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'cluster');
});

afterAll(async () => {
	delete process.env.NOMOS_SNAPSHOT_BEFORE;
	delete process.env.NOMOS_HEALTH_AFTER;
	resetEnvCache();
	await cluster?.close();
});

/** The guest commands (pct / qm) a member has run so far. */
const guestCommands = async (node: string) => (await cluster.member(node).argvLog()).filter((a) => a[0] === 'pct' || a[0] === 'qm').map((a) => a.join(' '));

async function request(input: Record<string, unknown>): Promise<RequestOutcome> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(`unexpected request error: ${r.error} (${r.hint ?? ''})`);
	return r;
}

describe('a cluster member as a host', () => {
	it('the sync sees every node and guest, VMs included, and which node holds which', async () => {
		const results = await syncAllHosts();
		expect(results.map((r) => [r.host, r.ok])).toEqual([
			['pve1', true],
			['pve2', true]
		]);
		const refs = (await listEntities(sql())).map((e) => `${e.kind}:${e.externalId}`);
		expect(refs).toEqual(
			expect.arrayContaining(['host:pve1', 'host:pve2', 'lxc:pve1/100', 'lxc:pve2/101', 'lxc:pve2/102', 'qemu:pve2/200', 'cluster:homelab'])
		);
		expect((await getEntity(sql(), 'qemu:pve2/200'))?.attributes).toMatchObject({ vmid: 200, name: 'haos', status: 'running', node: 'pve2' });
		const c = await getEntity(sql(), 'cluster:homelab');
		expect(c?.attributes).toMatchObject({
			quorate: true,
			nodes: [
				{ node: 'pve1', status: 'online', host: true },
				{ node: 'pve2', status: 'online', host: true },
				{ node: 'pve3', status: 'online', host: false }
			]
		});
		expect((c?.attributes.guests as { vmid: number; node: string }[]).map((g) => [g.vmid, g.node])).toEqual([
			[100, 'pve1'],
			[101, 'pve2'],
			[102, 'pve2'],
			[200, 'pve2'],
			[9000, 'pve3']
		]);
		expect((await getEntity(sql(), 'host:pve1'))?.attributes.cluster).toMatchObject({ cluster: 'homelab', nodeStatus: 'online', quorate: true });
	});

	it('a command for a guest goes to the node that holds it, by name too', async () => {
		const before1 = await guestCommands('pve1');
		const r = await request({ target: 'db', action: 'pct_stop', params: {}, reason: 'maintenance' });
		expect(r.execution.target).toBe('lxc:pve2/101');
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(r.execution.id);
		const done = await getExecution(sql(), r.execution.id);
		expect(done?.status, done?.error ?? '').toBe('succeeded');
		expect(await guestCommands('pve2')).toContain('pct stop 101');
		expect(await guestCommands('pve1')).toEqual(before1);
		expect((await cluster.member('pve2').containers()).find((c) => c.vmid === 101)?.status).toBe('stopped');
		// a host-wide action's blast radius counts the member's VMs too
		const h = await request({ target: 'pve2', action: 'pveam_update', params: {}, reason: 'r' });
		expect((await blastRadius(sql(), h.execution.id))?.containers.map((c) => c.ref)).toEqual(['lxc:pve2/101', 'lxc:pve2/102', 'qemu:pve2/200']);
	});

	it("a guest moved behind Nomos's back is refused at request time, naming its new node; the old node gets no command", async () => {
		await cluster.moveGuest(102, 'pve1');
		const before2 = await guestCommands('pve2');
		const r = await requestExecution(sessionId, { target: 'lxc:pve2/102', action: 'pct_stop', params: {}, reason: 'r' });
		expect(r).toMatchObject({ error: expect.stringContaining('CT 102 is on node pve1 now, not pve2'), hint: 'target lxc:pve1/102 instead' });
		expect(await guestCommands('pve2')).toEqual(before2);
		// Its entity moved with what the refusal saw, not at the next sync: the hint's ref is real.
		expect(await getEntity(sql(), 'lxc:pve2/102')).toBeNull();
		expect(await getEntity(sql(), 'lxc:pve1/102')).toMatchObject({
			name: 'web',
			hostName: 'pve1',
			attributes: expect.objectContaining({ vmid: 102, status: 'running' })
		});
		// moved to a node Nomos has no host entry for: it says so, and the entity leaves pve1
		await cluster.moveGuest(102, 'pve3');
		const r3 = await requestExecution(sessionId, { target: 'lxc:pve1/102', action: 'pct_stop', params: {}, reason: 'r' });
		expect(r3).toMatchObject({
			error: expect.stringContaining('CT 102 is on node pve3 now'),
			hint: expect.stringContaining('node pve3 has no host entry in Nomos')
		});
		expect(await guestCommands('pve3')).toEqual([]);
		expect((await listEntities(sql())).filter((e) => e.kind === 'lxc').map((e) => e.externalId)).not.toContain('pve1/102');
		// a VM too: moved behind Nomos's back, its qemu entity follows at the next look at the cluster
		await cluster.moveGuest(200, 'pve1');
		const vm = await requestExecution(sessionId, { target: 'pve2', action: 'qm_stop', params: { vmid: 200 }, reason: 'r' });
		expect(vm).toMatchObject({ error: expect.stringContaining('VM 200 is on node pve1 now, not pve2'), hint: 'target pve1 instead' });
		expect(await getEntity(sql(), 'qemu:pve2/200')).toBeNull();
		expect((await getEntity(sql(), 'qemu:pve1/200'))?.attributes).toMatchObject({ vmid: 200, node: 'pve1', name: 'haos' });
		await cluster.moveGuest(200, 'pve2');
		await syncAllHosts();
		expect(await getEntity(sql(), 'qemu:pve2/200')).not.toBeNull();
		expect(await getEntity(sql(), 'qemu:pve1/200')).toBeNull();
	});

	it('a guest that moves between approval and run is refused before anything runs, naming its new node', async () => {
		const r = await request({ target: 'lxc:pve1/100', action: 'pct_stop', params: {}, reason: 'r' });
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await cluster.moveGuest(100, 'pve2');
		const before1 = await guestCommands('pve1');
		const before2 = await guestCommands('pve2');
		await runExecution(r.execution.id);
		const done = await getExecution(sql(), r.execution.id);
		expect(done?.status).toBe('failed');
		expect(done?.error).toContain('CT 100 is on node pve2 now, not pve1');
		expect(done?.steps).toEqual([]);
		expect(await guestCommands('pve1')).toEqual(before1);
		expect(await guestCommands('pve2')).toEqual(before2);
		expect((await cluster.member('pve2').containers()).find((c) => c.vmid === 100)?.status).toBe('running');
	});

	it('a node that is down is reported as such and gets no command', async () => {
		await cluster.setDown('pve2', true);
		try {
			const results = await syncAllHosts();
			expect(results.find((r) => r.host === 'pve2')?.ok).toBe(false);
			expect((await getEntity(sql(), 'host:pve2'))?.attributes.cluster).toMatchObject({ nodeStatus: 'offline', quorate: false, seenBy: 'pve1' });
			expect((await getEntity(sql(), 'cluster:homelab'))?.attributes.nodes).toContainEqual({
				node: 'pve2',
				status: 'offline',
				host: true,
				offlineSince: expect.any(String)
			});
			const r = await requestExecution(sessionId, { target: 'lxc:pve2/101', action: 'pct_start', params: {}, reason: 'r' });
			expect(r).toMatchObject({ error: 'node pve2 is offline in cluster homelab (seen from pve1): nothing is sent to it' });
			// what the agent reads
			const call = { toolCallId: 't', messages: [] };
			const snap = (await getStateSnapshotTool({} as never).execute!({}, call)) as {
				hosts: { name: string; status: string }[];
				clusters: { status: string }[];
			};
			expect(snap.hosts.find((h) => h.name === 'pve2')?.status).toBe('offline (seen from pve1): nothing is sent to it; its guests are unknown, not absent');
			expect(snap.clusters[0].status).toBe('quorate: pve1 online, pve2 offline, pve3 online (no host entry)');
			const list = (await listEntitiesTool({} as never).execute!({ kind: 'host' }, call)) as { entities: { name: string; status: string }[] };
			expect(list.entities.map((e) => [e.name, e.status])).toEqual([
				['pve1', 'online'],
				['pve2', 'offline (seen from pve1): nothing is sent to it; its guests are unknown, not absent']
			]);
		} finally {
			await cluster.setDown('pve2', false);
		}
	});

	it('a node out of quorum is reported; changes there are refused, reads still go', async () => {
		await cluster.setLinkDown('pve2', true);
		try {
			const before2 = await guestCommands('pve2');
			const r = await requestExecution(sessionId, { target: 'lxc:pve2/101', action: 'pct_start', params: {}, reason: 'r' });
			expect(r).toMatchObject({ error: expect.stringContaining('node pve2 has lost quorum in cluster homelab') });
			expect(await guestCommands('pve2')).toEqual(before2);
			const read = await request({ target: 'lxc:pve2/101', action: 'pct_status', params: {}, reason: 'look' });
			expect(read.execution.status).not.toBe('failed');
			expect((await getEntity(sql(), 'host:pve1'))?.attributes.cluster).toMatchObject({ quorate: true });
		} finally {
			await cluster.setLinkDown('pve2', false);
		}
	});
});
