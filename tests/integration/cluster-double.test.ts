// The Proxmox double as a 3-node cluster: shared guest configs, per-member commands, quorum.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTo, execOn } from '../doubles/proxmox/client';
import { startProxmoxCluster, type ProxmoxCluster } from '../doubles/proxmox/cluster';

let cluster: ProxmoxCluster;
const conns = new Map<string, Client>();
const on = async (node: string, command: string) => {
	let c = conns.get(node);
	if (!c) conns.set(node, (c = await connectTo(cluster.member(node))));
	return execOn(c, command);
};
const json = async <T>(node: string, command: string): Promise<T> => {
	const r = await on(node, command);
	expect(r.code, r.stderr).toBe(0);
	return JSON.parse(r.stdout) as T;
};
type Resource = Record<string, unknown> & { id: string; type: string; node: string; status: string };

beforeAll(async () => {
	cluster = await startProxmoxCluster({
		delayMs: 10,
		members: [
			{ name: 'pve1', seed: [{ vmid: 100, hostname: 'caddy', status: 'running', memory: 1024 }] },
			{
				name: 'pve2',
				seed: [{ vmid: 101, hostname: 'db', status: 'stopped' }],
				vms: [{ vmid: 200, name: 'haos', status: 'running', memory: 4096, diskGb: 32 }]
			},
			{ name: 'pve3', vms: [{ vmid: 9000, name: 'debian-tpl', template: 1 }] }
		]
	});
});

afterAll(async () => {
	for (const c of conns.values()) c.end();
	await cluster?.close();
});

describe('a 3-node cluster of doubles', () => {
	it('every member answers /cluster/resources with all nodes, guests (CTs and VMs) and storage, in PVE 8 shape', async () => {
		for (const node of ['pve1', 'pve3']) {
			const res = await json<Resource[]>(node, 'pvesh get /cluster/resources --output-format json');
			expect(res.filter((r) => r.type === 'node').map((r) => [r.node, r.status])).toEqual([
				['pve1', 'online'],
				['pve2', 'online'],
				['pve3', 'online']
			]);
			expect(res.find((r) => r.id === 'lxc/100')).toMatchObject({
				type: 'lxc',
				vmid: 100,
				node: 'pve1',
				name: 'caddy',
				status: 'running',
				maxmem: 1024 * 1024 ** 2,
				maxcpu: 1,
				template: 0
			});
			expect(res.find((r) => r.id === 'lxc/101')).toMatchObject({ node: 'pve2', status: 'stopped', mem: 0 });
			expect(res.find((r) => r.id === 'qemu/200')).toMatchObject({
				type: 'qemu',
				node: 'pve2',
				name: 'haos',
				status: 'running',
				maxmem: 4096 * 1024 ** 2,
				maxdisk: 32 * 1024 ** 3
			});
			expect(res.find((r) => r.id === 'qemu/9000')).toMatchObject({ node: 'pve3', template: 1 });
			expect(res.find((r) => r.id === 'storage/pve2/local-lvm')).toMatchObject({
				type: 'storage',
				storage: 'local-lvm',
				plugintype: 'lvmthin',
				status: 'available',
				shared: 0
			});
			expect(res.find((r) => r.id === 'node/pve2')).toMatchObject({ maxcpu: 8, 'cgroup-mode': 2 });
		}
		const vms = await json<Resource[]>('pve2', 'pvesh get /cluster/resources --type vm --output-format json');
		expect(vms.map((r) => r.id).sort()).toEqual(['lxc/100', 'lxc/101', 'qemu/200', 'qemu/9000']);
		expect((await on('pve1', 'pvesh get /cluster/resources --type vms')).stderr).toContain(
			"type: value 'vms' does not have a value in the enumeration 'vm, storage, node, sdn'"
		);
		expect((await on('pve1', 'pvesh get /cluster/nextid')).stdout).toBe('102\n');
		// The API says `type => 'integer'`, but `defined($idlist->{$i})` stringifies $i first, so JSON::XS
		// writes a string (pve-manager stable-8 PVE/API2/Cluster.pm nextid).
		expect((await on('pve1', 'pvesh get /cluster/nextid --output-format json')).stdout).toBe('"102"\n');
		// pve-manager stable-8 PVE/CLI/pvesh.pm: `print STDERR "No '$cmd' handler defined for '$path'\n"; exit(1);`
		expect(await on('pve1', 'pvesh get /cluster/nothing')).toMatchObject({ code: 1, stderr: "No 'get' handler defined for '/cluster/nothing'\n" });
	});

	it("a node's used memory counts its running VMs (all their memory) besides its running CTs, in /nodes/<n>/status and /cluster/resources", async () => {
		const GiB = 1024 ** 3;
		// pve2: the node's own 2.5 GiB, CT 101 stopped, VM 200 running with 4 GiB.
		const status = await json<{ memory: { total: number; used: number; free: number } }>('pve1', 'pvesh get /nodes/pve2/status --output-format json');
		// `free` is the kernel's MemFree on PVE 8.4 (the double keeps 2 GiB of page cache out of it): what a guest can get is total - used.
		expect(status.memory).toMatchObject({ total: 32 * GiB, used: 6.5 * GiB, free: 23.5 * GiB });
		const node = (await json<Resource[]>('pve3', 'pvesh get /cluster/resources --type node --output-format json')).find((r) => r.node === 'pve2');
		expect(node?.mem).toBe(6.5 * GiB);
		// pve3's template never runs: nothing counted.
		expect((await json<{ memory: { used: number } }>('pve3', 'pvesh get /nodes/pve3/status --output-format json')).memory.used).toBe(2.5 * GiB);
	});

	it('pvecm status prints the corosync view as PVE 8 does', async () => {
		const r = await on('pve2', 'pvecm status');
		expect(r.code).toBe(0);
		const lines = r.stdout.split('\n');
		expect(lines.slice(0, 6)).toEqual([
			'Cluster information',
			'-------------------',
			'Name:             homelab',
			'Config Version:   3',
			'Transport:        knet',
			'Secure auth:      on'
		]);
		expect(lines).toContain('Quorate:          Yes');
		expect(lines).toContain('Nodes:            3');
		expect(lines).toContain('Node ID:          0x00000002');
		expect(lines).toContain('Expected votes:   3');
		expect(lines).toContain('Flags:            Quorate ');
		const members = lines.slice(lines.indexOf('    Nodeid      Votes Name') + 1).filter(Boolean);
		expect(members).toEqual(['0x00000001          1 10.10.10.11', '0x00000002          1 10.10.10.12 (local)', '0x00000003          1 10.10.10.13']);
	});

	it('/nodes/<node>/status answers for any member, with memory, CPU and the root filesystem', async () => {
		const st = await json<{ memory: { total: number; used: number; free: number }; cpuinfo: { cpus: number }; rootfs: { total: number; avail: number } }>(
			'pve1',
			'pvesh get /nodes/pve3/status --output-format json'
		);
		expect(st.memory.total).toBe(32 * 1024 ** 3);
		// PVE 8.4 (pve-common 8.3.1 ProcFSTools read_meminfo): used = MemTotal - MemAvailable, free = MemFree,
		// so free is below total - used (the page cache); what a guest can get is total - used.
		expect(st.memory.free).toBeLessThan(st.memory.total - st.memory.used);
		expect(st.cpuinfo.cpus).toBe(8);
		expect(st.rootfs.avail).toBeGreaterThan(0);
		expect(st.rootfs.avail).toBeLessThan(st.rootfs.total);
	});

	it("pct / qm act on the local guests only, and refuse another member's guest as Proxmox does", async () => {
		expect(await on('pve1', 'pct status 101')).toMatchObject({ code: 2, stderr: "Configuration file 'nodes/pve1/lxc/101.conf' does not exist\n" });
		expect(await on('pve1', 'qm status 200')).toMatchObject({ code: 2, stderr: "Configuration file 'nodes/pve1/qemu-server/200.conf' does not exist\n" });
		expect((await on('pve2', 'pct status 101')).stdout).toBe('status: stopped\n');
		const before = (await cluster.member('pve1').argvLog()).length;
		expect((await on('pve2', 'pct start 101')).code).toBe(0);
		expect((await cluster.member('pve2').containers()).find((c) => c.vmid === 101)?.status).toBe('running');
		expect((await cluster.member('pve1').argvLog()).length).toBe(before); // nothing ran on pve1
		// the id space is the cluster's
		const create = await on('pve1', 'pct create 101 local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst --hostname x');
		expect(create).toMatchObject({ code: 255, stderr: "CT 101 already exists on node 'pve2'\n" });
		// check_vmid_unused names the guest that holds the id (pve-cluster src/PVE/Cluster.pm: `$d->{type} eq 'qemu' ? 'VM' : 'CT'`)
		expect(await on('pve1', 'pct create 200 local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst --hostname x')).toMatchObject({
			code: 255,
			stderr: "VM 200 already exists on node 'pve2'\n"
		});
		expect(await on('pve1', 'qm create 101 --name x')).toMatchObject({ code: 255, stderr: "unable to create VM 101 - CT 101 already exists on node 'pve2'\n" });
	});

	it("a guest moved behind Nomos's back is answered by its new holder only", async () => {
		await cluster.moveGuest(101, 'pve3');
		expect(await cluster.holderOf(101)).toBe('pve3');
		expect((await on('pve2', 'pct stop 101')).stderr).toBe("Configuration file 'nodes/pve2/lxc/101.conf' does not exist\n");
		expect((await on('pve3', 'pct status 101')).stdout).toBe('status: running\n');
		const res = await json<Resource[]>('pve1', 'pvesh get /cluster/resources --type vm --output-format json');
		expect(res.find((r) => r.vmid === 101)?.node).toBe('pve3');
		await cluster.moveGuest(101, 'pve2');
	});

	it('a member cut off from corosync is alone and not quorate: it reads, refuses writes; the others see it offline', async () => {
		await cluster.setLinkDown('pve3', true);
		try {
			const status = await on('pve3', 'pvecm status');
			// corosync-quorumtool.c show_status: `return (is_quorate ? EXIT_SUCCESS : EXIT_NOT_QUORATE);`, EXIT_NOT_QUORATE 2
			expect(status.code).toBe(2);
			const st = status.stdout.split('\n');
			expect(st).toContain('Quorate:          No');
			expect(st).toContain('Nodes:            1');
			expect(st).toContain('Quorum:           2 Activity blocked');
			expect(st.slice(st.indexOf('    Nodeid      Votes Name') + 1).filter(Boolean)).toEqual(['0x00000003          1 10.10.10.13 (local)']);
			expect(await on('pve3', 'qm start 9000')).toMatchObject({ code: 255, stderr: 'cluster not ready - no quorum?\n' });
			expect((await on('pve3', 'qm status 9000')).stdout).toBe('status: stopped\n');

			expect((await on('pve1', 'pvecm status')).stdout).toContain('Quorate:          Yes');
			const res = await json<Resource[]>('pve1', 'pvesh get /cluster/resources --output-format json');
			// As 5 minutes after the node went away (pmxcfs drops rrd data older than that): API2Tools.pm
			// extract_node_stats / extract_vm_stats / extract_storage_stats with no rrd entry.
			expect(res.find((r) => r.id === 'node/pve3')).toEqual({ id: 'node/pve3', node: 'pve3', status: 'offline', type: 'node' });
			expect(res.find((r) => r.id === 'qemu/9000')).toEqual({ id: 'qemu/9000', node: 'pve3', status: 'unknown', type: 'qemu', vmid: 9000 });
			expect(res.find((r) => r.id === 'storage/pve3/local')).toEqual({
				content: expect.any(String),
				id: 'storage/pve3/local',
				node: 'pve3',
				plugintype: 'dir',
				shared: 0,
				status: 'unknown',
				storage: 'local',
				type: 'storage'
			});
			expect(res.find((r) => r.id === 'sdn/pve3/localnetwork')).toMatchObject({ status: 'ok' }); // a fixed 'ok' in Cluster.pm
			expect(await on('pve1', 'pvesh get /nodes/pve3/status')).toMatchObject({
				code: 255,
				stderr: 'proxy handler failed: ssh: connect to host 10.10.10.13 port 22: No route to host\n'
			});
		} finally {
			await cluster.setLinkDown('pve3', false);
		}
		expect((await on('pve3', 'pvecm status')).stdout).toContain('Quorate:          Yes');
	});

	it('a member powered off answers nothing; with two of three down the last one loses quorum', async () => {
		await cluster.setDown('pve3', true);
		try {
			await expect(connectTo(cluster.member('pve3'), { readyTimeout: 2000 })).rejects.toThrow();
			const nodes = await json<Resource[]>('pve1', 'pvesh get /cluster/resources --type node --output-format json');
			expect(nodes.map((n) => [n.node, n.status])).toEqual([
				['pve1', 'online'],
				['pve2', 'online'],
				['pve3', 'offline']
			]);
			expect((await on('pve1', 'pvecm status')).stdout).toContain('Quorate:          Yes'); // 2 of 3 votes
			await cluster.setDown('pve2', true);
			expect(await on('pve1', 'pvecm status')).toMatchObject({ code: 2, stdout: expect.stringContaining('Quorate:          No') });
			expect(await on('pve1', 'pct stop 100')).toMatchObject({ code: 255, stderr: 'cluster not ready - no quorum?\n' });
		} finally {
			await cluster.setDown('pve2', false);
			await cluster.setDown('pve3', false);
		}
		conns.get('pve2')?.end();
		conns.delete('pve2');
		expect((await on('pve2', 'pvecm status')).stdout).toContain('Quorate:          Yes');
	});

	it('a single double is no cluster member: pvecm says so, /cluster/resources lists the one node', async () => {
		const { startProxmoxDouble } = await import('../doubles/proxmox/server');
		const solo = await startProxmoxDouble({ nodeName: 'solo', seed: [{ vmid: 100, hostname: 'a' }] });
		const c = await connectTo(solo);
		try {
			expect(await execOn(c, 'pvecm status')).toMatchObject({
				code: 2,
				stderr: "Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?\n"
			});
			const res = JSON.parse((await execOn(c, 'pvesh get /cluster/resources --output-format json')).stdout) as Resource[];
			expect(res.filter((r) => r.type !== 'storage' && r.type !== 'sdn').map((r) => r.id)).toEqual(['lxc/100', 'node/solo']);
		} finally {
			c.end();
			await solo.close();
		}
	});

	it('the command line starts a cluster: --cluster 3 prints each node and how to add it, and stops clean', async () => {
		const cli = spawn(
			process.execPath,
			['--import', 'tsx', 'tests/doubles/proxmox/cli.ts', '--cluster', '3', '--vms', '[{"vmid":200,"name":"haos","status":"running"}]'],
			{ stdio: ['ignore', 'pipe', 'pipe'] }
		);
		let err = '';
		cli.stderr.on('data', (d: Buffer) => (err += d.toString()));
		const exited = new Promise<number | null>((resolve) => cli.once('exit', (code) => resolve(code)));
		try {
			const [line] = (await once(createInterface({ input: cli.stdout }), 'line')) as [string];
			const started = JSON.parse(line) as { cluster: string; dir: string; members: ({ node: string } & Parameters<typeof connectTo>[0])[] };
			expect(started.cluster).toBe('homelab');
			expect(started.members.map((m) => m.node)).toEqual(['pve1', 'pve2', 'pve3']);
			const c = await connectTo(started.members[2]);
			try {
				expect((await execOn(c, 'pvecm status')).stdout).toContain('Quorate:          Yes');
				const res = JSON.parse((await execOn(c, 'pvesh get /cluster/resources --type vm --output-format json')).stdout) as Resource[];
				expect(res.map((r) => [r.id, r.node])).toEqual([['qemu/200', 'pve1']]);
			} finally {
				c.end();
			}
			expect(err).toContain(`pve2: address 127.0.0.1, port ${started.members[1].port}, user root, key ${started.members[1].clientKeyPath}`);
			cli.kill('SIGTERM');
			expect(await exited).toBe(0);
			expect(existsSync(started.dir)).toBe(false);
		} finally {
			cli.kill('SIGKILL');
		}
	});
});
