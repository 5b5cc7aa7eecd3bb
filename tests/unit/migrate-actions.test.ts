// pct_migrate / qm_migrate: argv checked against the Proxmox VE 8 man pages (`pct migrate <vmid>
// <target> [--restart] [--timeout]`, `qm migrate <vmid> <target> [--online] [--with-local-disks]`),
// the zod params that keep model text out of them, the pre-check's verdicts and placement.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ACTIONS, CLUSTER_ACTIONS, needsPerson, type Precondition } from '../../src/lib/server/proxmox/actions';
import {
	guestStorages,
	migrationProblems,
	nodeCapacities,
	parseClusterResources,
	suggestNode,
	type MigrationFacts
} from '../../src/lib/server/proxmox/migrate';
import { toCommand } from '../../src/lib/server/ssh/quote';
import { verified } from '../../src/lib/server/executions/runner';
import { wantsSnapshot } from '../../src/lib/server/executions/safeguards';
import { catalogueLines } from '../../src/lib/server/agent/tools/request-execution';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

describe('migrate argv (pct(1), qm(1), PVE 8)', () => {
	it('pct_migrate: restart mode with a shutdown timeout, then the cluster read-back', () => {
		const def = ACTIONS.pct_migrate;
		const steps = def.steps(def.params.parse({ node: 'weak' }), { vmid: '101' });
		expect(steps.map((s) => s.argv)).toEqual([
			['pct', 'migrate', '101', 'weak', '--restart', '1', '--timeout', '180'],
			['pvesh', 'get', '/cluster/resources', '--type', 'vm', '--output-format', 'json']
		]);
		expect(steps[1].verify).toMatchObject({ json: { id: 'lxc/101', key: 'node' }, expect: 'weak' });
		expect(def.steps(def.params.parse({ node: 'pve-3', timeoutS: 600 }), { vmid: '101' })[0].argv.slice(-2)).toEqual(['--timeout', '600']);
		expect(def.preconditions!(def.params.parse({ node: 'weak' }), { vmid: '101' })).toEqual([
			{ kind: 'migrate-target', guest: 'ct', vmid: '101', node: 'weak' }
		]);
	});

	it('qm_migrate: --online and --with-local-disks only when asked', () => {
		const def = ACTIONS.qm_migrate;
		const argv = (p: Record<string, unknown>) => def.steps(def.params.parse(p), {})[0].argv;
		expect(argv({ vmid: 150, node: 'weak' })).toEqual(['qm', 'migrate', '150', 'weak']);
		expect(argv({ vmid: 150, node: 'weak', online: true })).toEqual(['qm', 'migrate', '150', 'weak', '--online', '1']);
		expect(argv({ vmid: 150, node: 'weak', online: true, withLocalDisks: true })).toEqual([
			'qm',
			'migrate',
			'150',
			'weak',
			'--online',
			'1',
			'--with-local-disks',
			'1'
		]);
		expect(def.steps(def.params.parse({ vmid: 150, node: 'weak' }), {})[1].verify).toMatchObject({ json: { id: 'qemu/150', key: 'node' }, expect: 'weak' });
	});

	it('mutations that need approval but no person; no snapshot before (a local snapshot can stop the move)', () => {
		for (const a of ['pct_migrate', 'qm_migrate'] as const) {
			expect(ACTIONS[a].classification).toBe('config_mutation');
			expect(needsPerson(a)).toBe(false);
		}
		expect(wantsSnapshot('pct_migrate', 'config_mutation', { kind: 'ct', vmid: '101' })).toBe(false);
		expect(wantsSnapshot('qm_migrate', 'config_mutation', { kind: 'vm', vmid: '150' })).toBe(false);
	});

	it('the node name is a DNS label: no option, no shell, no path gets in', () => {
		for (const node of ['--online', '-x', 'weak;reboot', 'a b', "we'ak", '$(id)', 'weak\n', '', 'a'.repeat(64), 'weak/../x']) {
			expect(ACTIONS.pct_migrate.params.safeParse({ node }).success, node).toBe(false);
			expect(ACTIONS.qm_migrate.params.safeParse({ vmid: 150, node }).success, node).toBe(false);
		}
		expect(ACTIONS.qm_migrate.params.safeParse({ vmid: 150, node: 'weak', force: true }).success).toBe(false);
		expect(ACTIONS.qm_migrate.params.safeParse({ vmid: 150, node: 'weak', online: 'yes' }).success).toBe(false);
		expect(ACTIONS.pct_migrate.params.safeParse({ node: 'weak', timeoutS: 0 }).success).toBe(false);
	});

	it('quoted in the one place, the command comes back from sh -c word for word', () => {
		const def = ACTIONS.qm_migrate;
		const [step] = def.steps(def.params.parse({ vmid: '150', node: 'Pve-2', online: true }), {});
		const seen = execFileSync('sh', ['-c', `printf '%s|' ${toCommand(step.argv)}`]).toString();
		expect(seen).toBe('qm|migrate|150|Pve-2|--online|1|');
	});

	it('shown to the model only with a cluster', () => {
		expect(CLUSTER_ACTIONS).toEqual(['pct_migrate', 'qm_migrate']);
		expect(catalogueLines()).not.toMatch(/migrate/);
		expect(catalogueLines({ cluster: true })).toMatch(/pct_migrate\(node, timeoutS\?\)/);
		// A VM action's vmid is said once, on the Target line.
		expect(catalogueLines({ cluster: true })).toMatch(/qm_migrate\(node, online\?, withLocalDisks\?\)/);
		expect(catalogueLines({ cluster: true })).toMatch(/every qm_\/vm_ action \(each takes the VM's vmid too\)/);
	});
});

describe('the read-back: the cluster lists the guest on the target node', () => {
	const list = (node: string) =>
		JSON.stringify([
			{ id: 'lxc/100', type: 'lxc', node: 'weak' },
			{ id: 'lxc/101', type: 'lxc', node }
		]);
	const v = { json: { id: 'lxc/101', key: 'node' }, expect: 'weak', failure: 'x' };
	it('passes only for that guest on that node', () => {
		expect(verified(v, list('weak'))).toBe(true);
		expect(verified(v, list('strong'))).toBe(false);
		expect(verified(v, JSON.stringify([{ id: 'lxc/100', node: 'weak' }]))).toBe(false);
		expect(verified(v, 'not json')).toBe(false);
		expect(verified({ ...v, json: { key: 'node' } }, JSON.stringify({ node: 'weak' }))).toBe(true);
	});
});

const RESOURCES = [
	{ id: 'node/strong', type: 'node', node: 'strong', status: 'online', maxmem: 32 * GiB, mem: 20 * GiB, cpu: 0.2, maxcpu: 8 },
	{ id: 'node/weak', type: 'node', node: 'weak', status: 'online', maxmem: 16 * GiB, mem: 2 * GiB, cpu: 0.05, maxcpu: 4 },
	{ id: 'node/tiny', type: 'node', node: 'tiny', status: 'offline', maxmem: 8 * GiB, mem: 0, cpu: 0, maxcpu: 2 },
	{ id: 'lxc/101', type: 'lxc', node: 'strong', vmid: 101, status: 'running', maxmem: 1024 * MiB },
	{ id: 'qemu/150', type: 'qemu', node: 'strong', vmid: 150, status: 'running', maxmem: 2048 * MiB },
	{
		id: 'storage/strong/local-lvm',
		type: 'storage',
		node: 'strong',
		storage: 'local-lvm',
		status: 'available',
		shared: 0,
		maxdisk: 400 * GiB,
		disk: 100 * GiB
	},
	{ id: 'storage/weak/local-lvm', type: 'storage', node: 'weak', storage: 'local-lvm', status: 'available', shared: 0, maxdisk: 200 * GiB, disk: 20 * GiB },
	{ id: 'storage/weak/ceph', type: 'storage', node: 'weak', storage: 'ceph', status: 'available', shared: 1, maxdisk: 900 * GiB, disk: 100 * GiB }
];

function facts(over: Partial<MigrationFacts> = {}): MigrationFacts {
	return {
		quorate: true,
		resources: parseClusterResources(JSON.stringify(RESOURCES)),
		config: 'arch: amd64\nhostname: caddy\nmemory: 1024\nrootfs: local-lvm:vm-101-disk-0,size=8G\nmp0: /srv/data,mp=/data\n',
		targetFreeBytes: 14 * GiB,
		targetStorages: new Map([
			['local-lvm', { active: true, shared: false }],
			['ceph', { active: true, shared: true }]
		]),
		unreadable: [],
		...over
	};
}
const ct: Extract<Precondition, { kind: 'migrate-target' }> = { kind: 'migrate-target', guest: 'ct', vmid: '101', node: 'weak' };
const vm = (o: Partial<Extract<Precondition, { kind: 'migrate-target' }>> = {}) => ({
	kind: 'migrate-target' as const,
	guest: 'vm' as const,
	vmid: '150',
	node: 'weak',
	...o
});
const VM_CONFIG =
	'memory: 2048\nname: ha\nscsi0: local-lvm:vm-150-disk-0,size=32G\nide2: local-lvm:vm-150-cloudinit,media=cdrom\nide0: local:iso/debian.iso,media=cdrom\nnet0: virtio=BC:24:11:00:00:01,bridge=vmbr0\n';

describe('the migration pre-check', () => {
	it('passes a CT to an online, quorate node with its memory and storage', () => {
		expect(migrationProblems(facts(), ct)).toEqual([]);
	});

	it('names what is missing: quorum, the node, memory, storage', () => {
		expect(migrationProblems(facts({ quorate: false }), ct)).toEqual(['the cluster has no quorum (pvecm status: Quorate: No)']);
		expect(migrationProblems(facts(), { ...ct, node: 'tiny' })).toEqual(['node tiny is offline']);
		expect(migrationProblems(facts(), { ...ct, node: 'nope' })).toEqual(['nope is not a node of this cluster (nodes: strong, weak, tiny)']);
		expect(migrationProblems(facts(), { ...ct, node: 'strong' })).toEqual(['CT 101 is already on strong']);
		expect(migrationProblems(facts({ targetFreeBytes: 512 * MiB }), ct)).toEqual(['not enough memory on weak: 0.5 GiB free, CT 101 needs 1.0 GiB']);
		expect(migrationProblems(facts({ targetStorages: new Map([['ceph', { active: true, shared: true }]]) }), ct)).toEqual([
			'storage local-lvm (rootfs) does not exist on weak'
		]);
		expect(migrationProblems(facts({ targetStorages: new Map([['local-lvm', { active: false, shared: false }]]) }), ct)).toEqual([
			'storage local-lvm (rootfs) is not active on weak'
		]);
		expect(migrationProblems(facts({ config: null }), ct)).toEqual(['the config of CT 101 could not be read']);
		expect(migrationProblems(facts({ unreadable: ['the memory of weak could not be read (x)'] }), ct)).toEqual(['the memory of weak could not be read (x)']);
		// Storages not read: never "does not exist" about them, whatever else the facts say.
		expect(migrationProblems(facts({ targetStorages: null }), ct).join('; ')).not.toMatch(/does not exist/);
	});

	it('memory counts only for a running guest (a stopped one does not start there)', () => {
		const stopped = RESOURCES.map((r) => (r.id === 'lxc/101' ? { ...r, status: 'stopped' } : r));
		expect(migrationProblems(facts({ resources: parseClusterResources(JSON.stringify(stopped)), targetFreeBytes: 0 }), ct)).toEqual([]);
	});

	it('a running VM goes online, and online with local disks only with withLocalDisks (as qm does)', () => {
		const f = facts({ config: VM_CONFIG });
		expect(migrationProblems(f, vm())).toEqual(['VM 150 is running: a running VM migrates online (online: true)']);
		expect(migrationProblems(f, vm({ online: true }))).toEqual([
			'VM 150 has local disks (scsi0, ide2 on local-lvm): online migration copies them only with withLocalDisks: true'
		]);
		expect(migrationProblems(f, vm({ online: true, withLocalDisks: true }))).toEqual([]);
		expect(migrationProblems(facts({ config: VM_CONFIG.replace(/local-lvm/g, 'ceph') }), vm({ online: true }))).toEqual([]);
	});

	it("reads a guest's storages: disks and the cloud-init drive, not ISO CD-ROMs or bind mounts", () => {
		expect([...guestStorages('vm', VM_CONFIG)]).toEqual([['local-lvm', ['scsi0', 'ide2']]]);
		expect([...guestStorages('ct', facts().config!)]).toEqual([['local-lvm', ['rootfs']]]);
		expect([...guestStorages('ct', 'rootfs: ceph:vm-1-disk-0,size=8G\nmp1: local-zfs:subvol-1-disk-1,mp=/x\n')]).toEqual([
			['ceph', ['rootfs']],
			['local-zfs', ['mp1']]
		]);
	});
});

describe('placement', () => {
	const nodes = nodeCapacities(parseClusterResources(JSON.stringify(RESOURCES)));
	it("reads each node's free memory, CPU and available storages", () => {
		expect(nodes.find((n) => n.node === 'weak')).toEqual({
			node: 'weak',
			status: 'online',
			freeMemMb: 14336,
			totalMemMb: 16384,
			cpuPct: 5,
			cpus: 4,
			storages: [
				{ storage: 'local-lvm', availGb: 180, shared: false },
				{ storage: 'ceph', availGb: 800, shared: true }
			]
		});
	});
	it('proposes the online node with the most free memory, and says why with the figures', () => {
		const p = suggestNode(nodes);
		expect(p.node).toBe('weak');
		expect(p.reason).toBe(
			'weak: the most free memory among the nodes online (14.0 GiB free of 16.0, CPU 5% of 4); next: strong 12.0 GiB; not online: tiny (offline)'
		);
	});
	it('a named storage, a memory need and the current node narrow it', () => {
		expect(suggestNode(nodes, { storage: 'ceph' }).node).toBe('weak');
		expect(suggestNode(nodes, { exclude: 'weak' })).toMatchObject({ node: 'strong', reason: expect.stringContaining('other than weak') });
		const none = suggestNode(nodes, { storage: 'ceph', exclude: 'weak' });
		expect(none.node).toBeNull();
		expect(none.reason).toBe('no node is online, other than weak, with storage ceph: not online: tiny (offline); strong lacks storage ceph');
		expect(suggestNode(nodes, { memoryMb: 13_000, exclude: 'weak' }).reason).toBe(
			'no node is online, other than weak, with 13000 MiB free: not online: tiny (offline); strong has 12288 MiB free'
		);
	});
});
