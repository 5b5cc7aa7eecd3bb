// The cluster parsers against output in the shape the Proxmox VE 8 sources print it (each sample
// cites the source it follows; docs/clusters.md "Checked against" lists them). The SSH double
// prints the same shapes (tests/integration/cluster-double.test.ts); these pin the parsers alone,
// including what the double does not print (pools, a 2-node cluster's flags, PVE 9's `available`).
import { describe, expect, it } from 'vitest';
import { parseClusterResources, parsePvecmStatus } from '../../src/lib/server/proxmox/cluster';
import { nodeCapacities, parseClusterResources as resourceRows, readMigrationFacts, type ReadArgv } from '../../src/lib/server/proxmox/migrate';

const GiB = 1024 ** 3;

// pve-cluster stable-bookworm src/PVE/CLI/pvecm.pm status: `printf "%-17s %s\n", "$label:", "$val";`
// for the Cluster information block, then `exec('corosync-quorumtool', '-siH')` (corosync v3.1.9
// tools/corosync-quorumtool.c display_quorum_data / display_nodes_data).
const pvecmStatus = (quorate: boolean, flags: string) => `Cluster information
-------------------
Name:             homelab
Config Version:   2
Transport:        knet
Secure auth:      on

Quorum information
------------------
Date:             Wed Dec  2 04:00:52 2026
Quorum provider:  corosync_votequorum
Nodes:            ${quorate ? 2 : 1}
Node ID:          0x00000001
Ring ID:          1.2d
Quorate:          ${quorate ? 'Yes' : 'No'}

Votequorum information
----------------------
Expected votes:   2
Highest expected: 2
Total votes:      ${quorate ? 2 : 1}
Quorum:           ${quorate ? '1  ' : '2 Activity blocked'}
Flags:            ${flags}

Membership information
----------------------
    Nodeid      Votes Name
0x00000001          1 192.168.1.11 (local)
${quorate ? '0x00000002          1 192.168.1.12\n' : ''}`;

describe('pvecm status (PVE 8)', () => {
	it("reads the name and the quorum, a 2-node cluster's flags too (`2Node Quorate WaitForAll `)", () => {
		expect(parsePvecmStatus(pvecmStatus(true, '2Node Quorate WaitForAll '))).toEqual({ name: 'homelab', quorate: true });
		// printed in full before corosync-quorumtool exits 2 (EXIT_NOT_QUORATE)
		expect(parsePvecmStatus(pvecmStatus(false, '2Node WaitForAll '))).toEqual({ name: 'homelab', quorate: false });
	});

	it('a standalone node (no corosync.conf) is no answer', () => {
		// pve-cluster src/PVE/Corosync.pm check_conf_exists (stderr; stdout is empty)
		expect(() => parsePvecmStatus('')).toThrow(/no cluster name or quorum line/);
	});
});

// pve-manager stable-8 PVE/API2/Cluster.pm resources, PVE/API2Tools.pm extract_*_stats; JSON from
// PVE::CLIFormatter (`to_json($data, { canonical => 1 })`: sorted keys). Pools come first (no
// node); a member offline for more than 5 minutes (pmxcfs drops its rrd data) keeps only ids and
// status on its rows.
const resources = [
	{ id: '/pool/prod', pool: 'prod', type: 'pool' },
	{
		cpu: 0.0123,
		disk: 1288490188,
		diskread: 1,
		diskwrite: 2,
		id: 'lxc/100',
		maxcpu: 2,
		maxdisk: 8589934592,
		maxmem: 1073741824,
		mem: 268435456,
		name: 'caddy',
		netin: 3,
		netout: 4,
		node: 'pve1',
		pool: 'prod',
		status: 'running',
		template: 0,
		type: 'lxc',
		uptime: 3600,
		vmid: 100,
		tags: 'web;prod'
	},
	{ id: 'qemu/9000', lock: 'backup', node: 'pve2', status: 'unknown', type: 'qemu', vmid: 9000 },
	{
		'cgroup-mode': 2,
		cpu: 0.05,
		disk: 5 * GiB,
		id: 'node/pve1',
		level: '',
		maxcpu: 8,
		maxdisk: 100 * GiB,
		maxmem: 32 * GiB,
		mem: 6 * GiB,
		node: 'pve1',
		status: 'online',
		type: 'node',
		uptime: 86400
	},
	{ id: 'node/pve2', node: 'pve2', status: 'offline', type: 'node' },
	{
		content: 'rootdir,images',
		disk: 10 * GiB,
		id: 'storage/pve1/local-lvm',
		maxdisk: 100 * GiB,
		node: 'pve1',
		plugintype: 'lvmthin',
		shared: 0,
		status: 'available',
		storage: 'local-lvm',
		type: 'storage'
	},
	{
		content: 'rootdir,images',
		id: 'storage/pve2/local-lvm',
		node: 'pve2',
		plugintype: 'lvmthin',
		shared: 0,
		status: 'unknown',
		storage: 'local-lvm',
		type: 'storage'
	},
	{ id: 'sdn/pve2/localnetwork', node: 'pve2', sdn: 'localnetwork', status: 'ok', type: 'sdn' }
];

describe('pvesh get /cluster/resources (PVE 8)', () => {
	it("reads guests and nodes; pools and sdn rows pass; a down member's guest has no name or figures", () => {
		const { nodes, guests } = parseClusterResources(JSON.stringify(resources));
		expect(nodes).toEqual([
			{ node: 'pve1', status: 'online', freeMemMb: 26 * 1024, totalMemMb: 32 * 1024, cpuPct: 5, cpus: 8, uptimeSec: 86400 },
			{ node: 'pve2', status: 'offline' }
		]);
		expect(guests[0]).toMatchObject({
			type: 'lxc',
			vmid: 100,
			node: 'pve1',
			name: 'caddy',
			status: 'running',
			cpus: 2,
			memLimitMb: 1024,
			tags: ['web', 'prod']
		});
		expect(guests[1]).toMatchObject({ type: 'qemu', vmid: 9000, node: 'pve2', name: 'VM9000', status: 'unknown', cpus: null, memLimitMb: null, uptimeSec: 0 });
	});

	it("placement counts a node's storages only while available, an offline node with no figures at all", () => {
		const caps = nodeCapacities(resourceRows(JSON.stringify(resources)));
		expect(caps).toEqual([
			{
				node: 'pve1',
				status: 'online',
				freeMemMb: 26 * 1024,
				totalMemMb: 32 * 1024,
				cpuPct: 5,
				cpus: 8,
				storages: [{ storage: 'local-lvm', availGb: 90, shared: false }]
			},
			{ node: 'pve2', status: 'offline', freeMemMb: 0, totalMemMb: 0, cpuPct: 0, cpus: 0, storages: [] }
		]);
	});
});

describe('pvesh get /nodes/<node>/status memory', () => {
	// A member read by the pre-check: pvecm, resources, the guest's config, the target's status and storages.
	const reader =
		(memory: Record<string, number>): ReadArgv =>
		async (argv) => {
			const ok = (stdout: string) => ({ exitCode: 0, stdout, stderr: '' });
			if (argv[0] === 'pvecm') return ok(pvecmStatus(true, 'Quorate '));
			if (argv[2] === '/cluster/resources') return ok(JSON.stringify(resources));
			if (argv[0] === 'pct') return ok('memory: 512\nrootfs: local-lvm:vm-100-disk-0,size=8G\n');
			if (argv[2] === '/nodes/pve1/status') return ok(JSON.stringify({ cpu: 0.05, memory, uptime: 1 }));
			return ok(JSON.stringify([{ storage: 'local-lvm', active: 1, enabled: 1, shared: 0, avail: 90 * GiB }]));
		};
	const pre = { kind: 'migrate-target' as const, guest: 'ct' as const, vmid: '100', node: 'pve1' };

	it("what a guest can get is total - used: PVE 8.4's free is MemFree (the page cache left out)", async () => {
		// pve-common 8.3.1 src/PVE/ProcFSTools.pm read_meminfo: `$res->{memfree} = $d->{memfree};`,
		// `$res->{memused} = $res->{memtotal} - $d->{memavailable};`
		const facts = await readMigrationFacts(reader({ total: 32 * GiB, used: 6 * GiB, free: 1 * GiB }), pre);
		expect(facts.targetFreeBytes).toBe(26 * GiB);
	});

	it('before 8.4 free was total - used; PVE 9 adds `available`, taken when there', async () => {
		expect((await readMigrationFacts(reader({ total: 32 * GiB, used: 6 * GiB, free: 26 * GiB }), pre)).targetFreeBytes).toBe(26 * GiB);
		// pve-manager master PVE/API2/Nodes.pm: `available => $meminfo->{memavailable},`
		expect((await readMigrationFacts(reader({ total: 32 * GiB, used: 6 * GiB, free: 1 * GiB, available: 25 * GiB }), pre)).targetFreeBytes).toBe(25 * GiB);
	});
});
