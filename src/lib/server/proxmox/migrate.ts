// The migration pre-check and placement: what Nomos reads from a cluster member before a guest
// moves (before approval, and again right before the run), and which node it would propose.
import { z } from 'zod';
import type { Precondition } from './actions';
import { parseKeyValues, parsePropertyString } from './inventory';
import { clusterResourceRows, type ClusterResource } from './cluster';

/** Runs one read-only argv on a cluster member (the source node) and returns what it printed. */
export type ReadArgv = (argv: string[]) => Promise<{ exitCode: number | null; stdout: string; stderr: string }>;

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const num = z.union([
	z.number(),
	z
		.string()
		.regex(/^-?\d+(\.\d+)?$/)
		.transform(Number)
]);

/** `/cluster/resources` rows, read by the one reader (proxmox/cluster.ts); kept under the name migrate's callers use. */
export const parseClusterResources = clusterResourceRows;
export type { ClusterResource };

/**
 * `pvesh get /nodes/<n>/status --output-format json`: the node's memory in bytes. What a guest can
 * get is `total - used` in every PVE 8 (and `available` from PVE 9), never `free`: since pve-common
 * 8.3.1 (PVE 8.4) `free` is the kernel's MemFree, the page cache left out (src/PVE/ProcFSTools.pm
 * read_meminfo: `$res->{memfree} = $d->{memfree};`, `$res->{memused} = $res->{memtotal} -
 * $d->{memavailable};`); before, it was total - used (`memfree + buffers + cached`).
 */
const nodeStatusSchema = z.looseObject({ memory: z.looseObject({ total: num, used: num, free: num.optional(), available: num.optional() }) });

/** `pvesh get /nodes/<n>/storage --output-format json`: one row per storage the node has configured. */
const nodeStorageSchema = z.array(
	z.looseObject({ storage: z.string(), active: num.optional(), enabled: num.optional(), shared: num.optional(), avail: num.optional() })
);

/** The storages a guest's disks are on (a CT's rootfs and mount points; a VM's disks, cloud-init drive included, ISO CD-ROMs not), by storage id → the disk keys. */
export function guestStorages(kind: 'ct' | 'vm', config: string): Map<string, string[]> {
	const out = new Map<string, string[]>();
	const keys = kind === 'ct' ? /^(rootfs|mp\d+)$/ : /^(scsi|virtio|sata|ide)\d+$|^(efidisk0|tpmstate0|unused\d+)$/;
	for (const [k, v] of Object.entries(parseKeyValues(config))) {
		if (!keys.test(k)) continue;
		const p = parsePropertyString(v);
		const m = /^([A-Za-z][A-Za-z0-9_.-]*):(.+)$/.exec(p._ ?? p.volume ?? '');
		if (!m) continue; // a bind mount (`/srv/data`), `none`, a pass-through device
		if (p.media === 'cdrom' && !/cloudinit/.test(m[2])) continue;
		out.set(m[1], [...(out.get(m[1]) ?? []), k]);
	}
	return out;
}

const gib = (bytes: number) => `${(bytes / GiB).toFixed(1)} GiB`;

/** Everything the pre-check read, or why it could not. */
export interface MigrationFacts {
	quorate: boolean | null;
	resources: ClusterResource[];
	/** the guest's config (`pct config` / `qm config` on the node holding it) */
	config: string | null;
	/** the target node's free memory in bytes (null: not read, e.g. the node is offline) */
	targetFreeBytes: number | null;
	/** the target node's storages: id → active and shared (null: not read) */
	targetStorages: Map<string, { active: boolean; shared: boolean }> | null;
	/** reads that failed, as sentences */
	unreadable: string[];
}

type MigratePre = Extract<Precondition, { kind: 'migrate-target' }>;

const firstLine = (r: { stdout: string; stderr: string }) => (r.stderr.trim() || r.stdout.trim()).split('\n')[0]?.slice(0, 200) || 'no output';

/** Reads what the pre-check needs from the member holding the guest: quorum, resources, the guest's config, the target's memory and storages. */
export async function readMigrationFacts(read: ReadArgv, p: MigratePre): Promise<MigrationFacts> {
	const facts: MigrationFacts = { quorate: null, resources: [], config: null, targetFreeBytes: null, targetStorages: null, unreadable: [] };
	const quorum = await read(['pvecm', 'status']);
	const q = /^Quorate:\s+(Yes|No)\b/m.exec(quorum.stdout)?.[1];
	if (q) facts.quorate = q === 'Yes';
	else facts.unreadable.push(`pvecm status did not say whether the cluster is quorate (${firstLine(quorum)})`);
	const res = await read(['pvesh', 'get', '/cluster/resources', '--output-format', 'json']);
	try {
		if (res.exitCode !== 0) throw new Error(firstLine(res));
		facts.resources = parseClusterResources(res.stdout);
	} catch (e) {
		facts.unreadable.push(`the cluster's resources could not be read (${(e as Error).message})`);
	}
	const cfg = await read([p.guest === 'ct' ? 'pct' : 'qm', 'config', p.vmid]);
	if (cfg.exitCode === 0) facts.config = cfg.stdout;
	const target = facts.resources.find((r) => r.type === 'node' && r.node === p.node);
	if (target?.status !== 'online') return facts;
	const status = await read(['pvesh', 'get', `/nodes/${p.node}/status`, '--output-format', 'json']);
	try {
		if (status.exitCode !== 0) throw new Error(firstLine(status));
		const m = nodeStatusSchema.parse(JSON.parse(status.stdout)).memory;
		facts.targetFreeBytes = m.available ?? m.total - m.used;
	} catch (e) {
		facts.unreadable.push(`the memory of ${p.node} could not be read (${(e as Error).message.slice(0, 200)})`);
	}
	const storage = await read(['pvesh', 'get', `/nodes/${p.node}/storage`, '--output-format', 'json']);
	try {
		if (storage.exitCode !== 0) throw new Error(firstLine(storage));
		const rows = nodeStorageSchema.parse(JSON.parse(storage.stdout));
		facts.targetStorages = new Map(rows.map((s) => [s.storage, { active: s.active === 1 && s.enabled !== 0, shared: s.shared === 1 }]));
	} catch (e) {
		facts.unreadable.push(`the storages of ${p.node} could not be read (${(e as Error).message.slice(0, 200)})`);
	}
	return facts;
}

/**
 * What stands in the way of this migration, as sentences for the operator and the agent (empty:
 * it may run). Unreadable facts count as problems: a pre-check that could not look says no.
 */
export function migrationProblems(f: MigrationFacts, p: MigratePre): string[] {
	const what = `${p.guest === 'ct' ? 'CT' : 'VM'} ${p.vmid}`;
	const problems = [...f.unreadable];
	if (f.quorate === false) problems.push('the cluster has no quorum (pvecm status: Quorate: No)');
	const nodes = f.resources.filter((r) => r.type === 'node' && r.node);
	const target = nodes.find((r) => r.node === p.node);
	const guest = f.resources.find((r) => r.id === `${p.guest === 'ct' ? 'lxc' : 'qemu'}/${p.vmid}`);
	if (f.resources.length && !target) problems.push(`${p.node} is not a node of this cluster (nodes: ${nodes.map((n) => n.node).join(', ') || 'none'})`);
	else if (target && target.status !== 'online') problems.push(`node ${p.node} is ${target.status ?? 'not online'}`);
	if (f.resources.length && !guest) problems.push(`the cluster does not list ${what}`);
	if (guest?.node === p.node) problems.push(`${what} is already on ${p.node}`);
	if (f.config === null) problems.push(`the config of ${what} could not be read`);
	if (problems.length) return problems;

	const running = guest?.status === 'running';
	const memoryMb = Number(parseKeyValues(f.config!).memory ?? 512); // both tools' default
	if (running && f.targetFreeBytes !== null && f.targetFreeBytes < memoryMb * MiB) {
		problems.push(`not enough memory on ${p.node}: ${gib(f.targetFreeBytes)} free, ${what} needs ${gib(memoryMb * MiB)}`);
	}
	const disks = guestStorages(p.guest, f.config!);
	const local: string[] = [];
	// Storages that could not be read are already a problem (unreadable): nothing is said about them here.
	for (const [storage, keys] of f.targetStorages ? disks : []) {
		const s = f.targetStorages!.get(storage);
		if (!s) problems.push(`storage ${storage} (${keys.join(', ')}) does not exist on ${p.node}`);
		else if (!s.active) problems.push(`storage ${storage} (${keys.join(', ')}) is not active on ${p.node}`);
		else if (!s.shared) local.push(`${keys.join(', ')} on ${storage}`);
	}
	if (p.guest === 'vm' && running && !p.online) problems.push(`${what} is running: a running VM migrates online (online: true)`);
	if (p.guest === 'vm' && running && p.online && local.length && !p.withLocalDisks) {
		problems.push(`${what} has local disks (${local.join('; ')}): online migration copies them only with withLocalDisks: true`);
	}
	return problems;
}

/** One node as placement sees it. */
export interface NodeCapacity {
	node: string;
	status: string;
	freeMemMb: number;
	totalMemMb: number;
	/** CPU load 0–100 % and the node's CPU count */
	cpuPct: number;
	cpus: number;
	storages: { storage: string; availGb: number; shared: boolean }[];
}

/** Each node's free memory, CPU and available storages, from `/cluster/resources`. */
export function nodeCapacities(resources: ClusterResource[]): NodeCapacity[] {
	return resources
		.filter((r) => r.type === 'node' && r.node)
		.map((n) => ({
			node: n.node!,
			status: n.status ?? 'unknown',
			freeMemMb: Math.max(0, Math.round(((n.maxmem ?? 0) - (n.mem ?? 0)) / MiB)),
			totalMemMb: Math.round((n.maxmem ?? 0) / MiB),
			cpuPct: Math.round((n.cpu ?? 0) * 1000) / 10,
			cpus: n.maxcpu ?? 0,
			storages: resources
				.filter((s) => s.type === 'storage' && s.node === n.node && s.status === 'available' && s.storage)
				.map((s) => ({ storage: s.storage!, availGb: Math.round(((s.maxdisk ?? 0) - (s.disk ?? 0)) / GiB), shared: s.shared === 1 }))
		}))
		.sort((a, b) => a.node.localeCompare(b.node));
}

export type Placement = { node: string; reason: string; nodes: NodeCapacity[] } | { node: null; reason: string; nodes: NodeCapacity[] };

/**
 * The node Nomos proposes for a guest: among the online nodes (but `exclude`, the one it is on),
 * those with the storage (when named) and the memory (when given), the one with the most free
 * memory; equal memory, the less busy CPU. The reason says why, with the figures, in one line.
 */
export function suggestNode(nodes: NodeCapacity[], need: { memoryMb?: number; storage?: string; exclude?: string } = {}): Placement {
	const online = nodes.filter((n) => n.status === 'online' && n.node !== need.exclude);
	const withStorage = need.storage ? online.filter((n) => n.storages.some((s) => s.storage === need.storage)) : online;
	const fits = need.memoryMb ? withStorage.filter((n) => n.freeMemMb >= need.memoryMb!) : withStorage;
	const why = [
		'online',
		...(need.exclude ? [`other than ${need.exclude}`] : []),
		...(need.storage ? [`with storage ${need.storage}`] : []),
		...(need.memoryMb ? [`with ${need.memoryMb} MiB free`] : [])
	].join(', ');
	const down = nodes.filter((n) => n.status !== 'online').map((n) => `${n.node} (${n.status})`);
	if (!fits.length) {
		const short = [
			...(down.length ? [`not online: ${down.join(', ')}`] : []),
			...(need.storage ? online.filter((n) => !withStorage.includes(n)).map((n) => `${n.node} lacks storage ${need.storage}`) : []),
			...withStorage.filter((n) => !fits.includes(n)).map((n) => `${n.node} has ${n.freeMemMb} MiB free`)
		];
		return { node: null, reason: `no node is ${why}${short.length ? `: ${short.join('; ')}` : ''}`, nodes };
	}
	const [best, ...rest] = [...fits].sort((a, b) => b.freeMemMb - a.freeMemMb || a.cpuPct - b.cpuPct || a.node.localeCompare(b.node));
	const figures = (n: NodeCapacity) => `${(n.freeMemMb / 1024).toFixed(1)} GiB free of ${(n.totalMemMb / 1024).toFixed(1)}, CPU ${n.cpuPct}% of ${n.cpus}`;
	const others = rest.map((n) => `${n.node} ${(n.freeMemMb / 1024).toFixed(1)} GiB`);
	const reason =
		`${best.node}: the most free memory among the nodes ${why} (${figures(best)})` +
		(others.length ? `; next: ${others.join(', ')}` : '') +
		(down.length ? `; not online: ${down.join(', ')}` : '');
	return { node: best.node, reason, nodes };
}
