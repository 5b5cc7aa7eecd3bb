// A configured cluster member that does not answer Nomos is offline/unknown (issue #42, item 8):
// in Settings' cluster view ("never answered", "not answering since …", not "No quorum" from a
// view it read before it went silent), in the agent's cluster overview, placement and snapshot,
// and its guests are unknown there, never absent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getStateSnapshotTool } from '../../src/lib/server/agent/tools/get-state-snapshot';
import { listEntitiesTool } from '../../src/lib/server/agent/tools/list-entities';
import { listClusterOverviews } from '../../src/lib/server/cluster/overview';
import { getHostByName } from '../../src/lib/server/db/queries/hosts';
import { resetEnvCache } from '../../src/lib/server/env';
import { hostReachability } from '../../src/lib/server/hosts/reachability';
import { syncHost } from '../../src/lib/server/inventory/sync';
import { startProxmoxCluster, type ProxmoxCluster } from '../doubles/proxmox/cluster';
import { useTestDatabase } from '../helpers/db';
import { addHost } from '../helpers/executions';

useTestDatabase();
let cluster: ProxmoxCluster;
const READ_MS = 3_000;

type Snapshot = {
	hosts: { name: string; status: string; cts: string[] }[];
	clusters: { status: string; guests: string[] }[];
	placement: { node: string | null; reason: string; nodes: string[] };
};
const ctx = { sessionId: 's', messageId: 'm', signal: new AbortController().signal, turn: { httpGets: 0 } };
const snapshot = () => getStateSnapshotTool(ctx).execute!({}, { toolCallId: 't', messages: [] }) as unknown as Promise<Snapshot>;
const sync = async (name: string) => syncHost((await getHostByName(sql(), name))!, { timeoutMs: READ_MS });
const node = async (name: string) => (await listClusterOverviews('admin'))[0].nodes.find((n) => n.node === name)!;

beforeAll(async () => {
	cluster = await startProxmoxCluster({
		delayMs: 1,
		members: [
			{ name: 'pve1', seed: [{ vmid: 140, hostname: 'proxy', status: 'running' }] },
			{ name: 'pve2', seed: [{ vmid: 141, hostname: 'db', status: 'running' }] },
			{ name: 'pve3', seed: [{ vmid: 142, hostname: 'nas', status: 'running' }], vms: [{ vmid: 240, name: 'haos', status: 'running' }] }
		]
	});
	for (const m of cluster.members) await addHost(m);
	process.env.NOMOS_INVENTORY_READ_S = String(READ_MS / 1000);
	resetEnvCache();
});
afterAll(async () => {
	delete process.env.NOMOS_INVENTORY_READ_S;
	resetEnvCache();
	await cluster?.close();
});

describe('a member that does not answer Nomos', () => {
	it('never started answering (the cluster lists it online): offline, never answered — in Settings and in every answer', async () => {
		// pve3 runs in the cluster, but its SSH refuses Nomos from the start (a firewall, a wrong address, powered-off sshd).
		cluster.member('pve3').setReachable(false);
		expect(await sync('pve1')).toMatchObject({ ok: true });
		expect(await sync('pve3')).toMatchObject({ ok: false });
		const n3 = await node('pve3');
		expect(n3).toMatchObject({ status: 'online', host: { lastAnswerAt: null, unansweredSince: expect.any(String) } });
		expect((await listClusterOverviews('admin'))[0].quorate).toBe(true); // pve1 answers
		expect(await hostReachability(sql(), 'pve3')).toMatchObject({
			state: 'offline',
			lastAnswerAt: null,
			why: expect.stringMatching(/^pve3 has never answered/)
		});

		const snap = await snapshot();
		expect(snap.clusters[0].status).toBe('quorate: pve1 online, pve2 online, pve3 offline/unknown (never answered Nomos)');
		expect(snap.clusters[0].guests).toContain(
			'qemu:pve3/240 haos unknown (pve3 offline: pve3 has never answered (tried since ' +
				clockOf(n3.host!.unansweredSince!) +
				'): ' +
				'SSH to pve3 (127.0.0.1:' +
				cluster.member('pve3').port +
				') failed: the host closed the connection before authentication; last listed running)'
		);
		expect(snap.hosts.find((h) => h.name === 'pve3')?.status).toMatch(/^offline\/unknown: pve3 has never answered .*its guests are unknown, not absent$/);
		// Placement never proposes it, and says why.
		expect(snap.placement.node).not.toBe('pve3');
		expect(snap.placement.nodes.find((l) => l.startsWith('pve3'))).toMatch(
			/^pve3 not answering Nomos \(pve3 has never answered.*\): not a candidate; its load and guests are unknown$/
		);
		const hosts = (await listEntitiesTool(ctx).execute!({ kind: 'cluster' }, { toolCallId: 't', messages: [] })) as { entities: { status: string }[] };
		expect(hosts.entities[0].status).toContain('pve3 offline/unknown (never answered Nomos)');
		cluster.member('pve3').setReachable(true);
	});

	it('a member that read "no quorum" and then went silent is offline, not "No quorum since"', async () => {
		await cluster.setLinkDown('pve2', true);
		expect(await sync('pve2')).toMatchObject({ ok: true });
		expect((await node('pve2')).noQuorumSince).not.toBeNull();
		// Its link heals, then it is powered off before any member reads the cluster again: the last
		// quorate view still lists it online, its own last view said "no quorum", and it refuses every connection.
		await cluster.setLinkDown('pve2', false);
		cluster.member('pve2').setReachable(false);
		expect(await sync('pve2')).toMatchObject({ ok: false });
		const n2 = await node('pve2');
		expect(n2).toMatchObject({ status: 'online', noQuorumSince: expect.any(String) });
		expect(n2.host).toMatchObject({ lastAnswerAt: expect.any(String), unansweredSince: expect.any(String) });
		expect(await hostReachability(sql(), 'pve2')).toMatchObject({ state: 'offline', why: expect.stringMatching(/^pve2 has not answered since \d\d:\d\d UTC/) });
		const snap = await snapshot();
		expect(snap.clusters[0].status).toMatch(/pve2 offline\/unknown \(not answering Nomos since \d\d:\d\d UTC\)/);
		expect(snap.hosts.find((h) => h.name === 'pve2')?.cts).toEqual([
			expect.stringMatching(/^141 db unknown now \(was running\) — last seen \d+ s ago .*pve2 has not answered since/)
		]);
		cluster.member('pve2').setReachable(true);
		expect(await sync('pve2')).toMatchObject({ ok: true });
		expect((await node('pve2')).host).toMatchObject({ unansweredSince: null });
	});
});

function clockOf(iso: string): string {
	return `${new Date(iso).toISOString().slice(11, 16)} UTC`;
}
