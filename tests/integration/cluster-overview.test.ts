// Settings → Hosts' cluster view, from recorded views (no SSH: the views are what
// readClusterView returns): each node's standing, since when it is down, load, guests, host entry,
// quorum as Nomos can use it, and `cluster.updated` only when what the view shows changed.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { recordClusterView } from '../../src/lib/server/db/queries/entities';
import { listClusterOverviews } from '../../src/lib/server/cluster/overview';
import type { ClusterView } from '../../src/lib/server/proxmox/cluster';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();

const GUESTS: ClusterView['guests'] = [
	{
		type: 'lxc',
		vmid: 100,
		node: 'pve1',
		name: 'caddy',
		status: 'running',
		template: false,
		cpuPercent: 0,
		cpus: 1,
		memUsedMb: 0,
		memLimitMb: 512,
		diskLimitGb: 4,
		uptimeSec: 0,
		tags: []
	},
	{
		type: 'lxc',
		vmid: 101,
		node: 'pve2',
		name: 'db',
		status: 'running',
		template: false,
		cpuPercent: 0,
		cpus: 1,
		memUsedMb: 0,
		memLimitMb: 512,
		diskLimitGb: 4,
		uptimeSec: 0,
		tags: []
	},
	{
		type: 'qemu',
		vmid: 200,
		node: 'pve2',
		name: 'haos',
		status: 'running',
		template: false,
		cpuPercent: 0,
		cpus: 2,
		memUsedMb: 0,
		memLimitMb: 4096,
		diskLimitGb: 32,
		uptimeSec: 0,
		tags: []
	},
	{
		type: 'qemu',
		vmid: 9000,
		node: 'pve3',
		name: 'debian-tpl',
		status: 'stopped',
		template: true,
		cpuPercent: 0,
		cpus: 1,
		memUsedMb: 0,
		memLimitMb: 1024,
		diskLimitGb: 2,
		uptimeSec: 0,
		tags: []
	}
];
const load = (free: number) => ({ freeMemMb: free, totalMemMb: 32768, cpuPct: 7.5, cpus: 8, uptimeSec: 200_000 });
const view = (readFrom: string, quorate: boolean, status: Record<string, 'online' | 'offline'>, free = 20000): ClusterView => ({
	name: 'homelab',
	readFrom,
	quorate,
	nodes: Object.entries(status).map(([node, s]) => ({ node, status: s, ...(s === 'online' ? load(free) : {}) })),
	guests: GUESTS
});
const ALL_UP = { pve1: 'online', pve2: 'online', pve3: 'online' } as const;

const events = async () =>
	(await sql()<{ payload: { cluster: string } }[]>`select payload from events where type = 'cluster.updated' order by id`).map((e) => e.payload.cluster);
const overview = async (role = 'admin') => {
	const [c] = await listClusterOverviews(role);
	return c;
};
const node = async (name: string) => (await overview()).nodes.find((n) => n.node === name)!;

beforeAll(async () => {
	// pve1 and pve2 have host entries (and host entities from a sync); pve3 has none.
	for (const [name, port] of [
		['pve1', 2201],
		['pve2', 2202]
	] as const) {
		await sql()`insert into hosts (name, address, port, username, key_path, host_key_fingerprint) values (${name}, '10.0.0.1', ${port}, 'root', '/etc/nomos/id_ed25519', 'SHA256:x')`;
		await sql()`insert into entities (kind, external_id, name, host_name, attributes) values ('host', ${name}, ${name}, ${name}, '{}'::jsonb)`;
	}
});

describe('the cluster view', () => {
	it('a standalone fleet has none', async () => {
		expect(await listClusterOverviews('admin')).toEqual([]);
	});

	it('shows every node: standing, load, guests by kind, host entry; quorate; the form defaults from the member that read it', async () => {
		await recordClusterView(sql(), view('pve1', true, ALL_UP));
		expect(await events()).toEqual(['homelab']);
		const c = await overview();
		expect(c).toMatchObject({
			name: 'homelab',
			quorate: true,
			readFrom: 'pve1',
			addDefaults: { port: 2201, username: 'root', keyPath: '/etc/nomos/id_ed25519', mutationKeyPath: null }
		});
		expect(c.nodes.map((n) => [n.node, n.status, !!n.host, n.cts, n.vms, n.templates])).toEqual([
			['pve1', 'online', true, 1, 0, 0],
			['pve2', 'online', true, 1, 1, 0],
			['pve3', 'online', false, 0, 0, 1]
		]);
		expect(c.nodes[0]).toMatchObject({
			freeMemMb: 20000,
			totalMemMb: 32768,
			cpuPct: 7.5,
			cpus: 8,
			uptimeSec: 200_000,
			offlineSince: null,
			noQuorumSince: null
		});
		// An operator does not see the key path.
		expect((await overview('operator')).addDefaults).toEqual({ port: 2201, username: 'root', keyPath: '', mutationKeyPath: null });
	});

	it('a node added from the view starts with the reading member’s mutation key too', async () => {
		await sql()`update hosts set mutation_key_path = '/etc/nomos/id_mutate' where name = 'pve1'`;
		try {
			expect((await overview()).addDefaults).toEqual({
				port: 2201,
				username: 'root',
				keyPath: '/etc/nomos/id_ed25519',
				mutationKeyPath: '/etc/nomos/id_mutate'
			});
			expect((await overview('operator')).addDefaults).toMatchObject({ keyPath: '', mutationKeyPath: '' });
		} finally {
			await sql()`update hosts set mutation_key_path = null where name = 'pve1'`;
		}
	});

	it('a read that only moves the load figures updates them without an event', async () => {
		await recordClusterView(sql(), view('pve1', true, ALL_UP, 12000));
		expect(await events()).toHaveLength(1);
		expect((await node('pve1')).freeMemMb).toBe(12000);
	});

	it('a node seen down: shown down since the first read that saw it so, kept while it stays down, no figures', async () => {
		await recordClusterView(sql(), view('pve1', true, { ...ALL_UP, pve2: 'offline' }));
		expect(await events()).toHaveLength(2);
		const down = await node('pve2');
		expect(down).toMatchObject({ status: 'offline', freeMemMb: null, cpuPct: null, cts: 1, vms: 1 });
		expect(down.offlineSince).toMatch(/^\d{4}-\d\d-\d\dT/);
		const [{ host2 }] = await sql()<
			{ host2: { nodeStatus: string; quorate: boolean } }[]
		>`select attributes->'cluster' as host2 from entities where kind = 'host' and external_id = 'pve2'`;
		expect(host2).toMatchObject({ nodeStatus: 'offline', quorate: false });

		// Seen down again (from another member, with other load figures): still down since the first read, nothing new to show.
		await recordClusterView(sql(), view('pve3', true, { ...ALL_UP, pve2: 'offline' }, 9000));
		expect(await events()).toHaveLength(2);
		expect((await node('pve2')).offlineSince).toBe(down.offlineSince);
		// The cluster stays quorate for Nomos: pve1 is online, quorate and answers.
		expect((await overview()).quorate).toBe(true);
	});

	it('back online: no longer down, one event', async () => {
		await recordClusterView(sql(), view('pve1', true, ALL_UP));
		expect(await events()).toHaveLength(3);
		expect(await node('pve2')).toMatchObject({ status: 'online', offlineSince: null });
	});

	it('a member out of quorum is marked (since when) until a quorate view sees it online; with no usable member the cluster has no quorum', async () => {
		await recordClusterView(sql(), view('pve1', false, { pve1: 'online', pve2: 'offline', pve3: 'offline' }));
		expect(await events()).toHaveLength(4);
		// Its view of the others is its own isolation: they stay as the last quorate view saw them.
		const c = await overview();
		expect(c.nodes.map((n) => [n.node, n.status, n.noQuorumSince !== null])).toEqual([
			['pve1', 'online', true],
			['pve2', 'online', false],
			['pve3', 'online', false]
		]);
		expect(c.quorate).toBe(true); // pve2 still counts…
		await sql()`update hosts set last_error = 'connect ECONNREFUSED' where name = 'pve2'`;
		const after = await overview();
		expect(after.quorate).toBe(false); // …until its last sync failed: no member Nomos can change things through
		expect(after.nodes[1].host).toMatchObject({ lastError: 'connect ECONNREFUSED' });
		// The same isolated view again: nothing new to show.
		await recordClusterView(sql(), view('pve1', false, { pve1: 'online', pve2: 'offline', pve3: 'offline' }));
		expect(await events()).toHaveLength(4);

		await sql()`update hosts set last_error = null where name = 'pve2'`;
		await recordClusterView(sql(), view('pve2', true, ALL_UP));
		expect(await events()).toHaveLength(5);
		const healed = await overview();
		expect(healed.quorate).toBe(true);
		expect(healed.nodes.every((n) => n.noQuorumSince === null)).toBe(true);
	});

	it('a guest that moved changes the counts and emits', async () => {
		await recordClusterView(sql(), { ...view('pve1', true, ALL_UP), guests: GUESTS.map((g) => (g.vmid === 101 ? { ...g, node: 'pve1' } : g)) });
		expect(await events()).toHaveLength(6);
		expect((await overview()).nodes.map((n) => n.cts)).toEqual([2, 0, 0]);
	});

	it('a host added for a node counts at once, before the next sync', async () => {
		await sql()`insert into hosts (name, address, port, username, key_path) values ('pve3', '10.0.0.3', 22, 'root', '/k')`;
		expect((await node('pve3')).host).toMatchObject({ lastError: null });
	});
});
