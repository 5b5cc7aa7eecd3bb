// Reads a Proxmox cluster as one member sees it: `pvecm status` (name, quorum) and
// `pvesh get /cluster/resources` (which node holds which guest, which nodes are online).
import type { Client } from 'ssh2';
import { z } from 'zod';
import { ProxmoxError, runChecked, type RunOptions } from './inventory';

/**
 * corosync-quorumtool's exit when the partition is not quorate (corosync v3.1.x,
 * tools/corosync-quorumtool.c: `#define EXIT_NOT_QUORATE 2`, `return (is_quorate ? EXIT_SUCCESS :
 * EXIT_NOT_QUORATE);`), which pvecm status execs (pve-cluster stable-bookworm, src/PVE/CLI/pvecm.pm:
 * `exec('corosync-quorumtool', '-siH');`).
 */
export const PVECM_NOT_QUORATE = 2;

const num = z.union([
	z.number(),
	z
		.string()
		.regex(/^-?\d+(\.\d+)?$/)
		.transform(Number)
]);

/** One row of `pvesh get /cluster/resources --output-format json` (PVE 8): nodes, guests, storages, sdn. */
const resourceSchema = z.looseObject({
	id: z.string(),
	type: z.string(),
	node: z.string().optional(),
	status: z.string().optional(),
	vmid: num.optional(),
	name: z.string().optional(),
	storage: z.string().optional(),
	shared: num.optional(),
	cpu: num.optional(),
	maxcpu: num.optional(),
	mem: num.optional(),
	maxmem: num.optional(),
	disk: num.optional(),
	maxdisk: num.optional(),
	uptime: num.optional(),
	template: num.optional(),
	tags: z.string().optional()
});
export type ClusterResource = z.infer<typeof resourceSchema>;

export interface ClusterGuest {
	type: 'lxc' | 'qemu';
	vmid: number;
	node: string;
	name: string;
	status: string;
	template: boolean;
	cpuPercent: number;
	cpus: number | null;
	memUsedMb: number;
	memLimitMb: number | null;
	diskLimitGb: number | null;
	uptimeSec: number;
	tags: string[];
}

export interface ClusterNode {
	node: string;
	/** online | offline, as the reading member sees it */
	status: string;
	/** an online node's load as `/cluster/resources` reports it (absent for one that is offline) */
	freeMemMb?: number;
	totalMemMb?: number;
	cpuPct?: number;
	cpus?: number;
	uptimeSec?: number;
}

export interface ClusterView {
	name: string;
	/** the member that answered */
	readFrom: string;
	/** whether the reading member is in a quorate partition */
	quorate: boolean;
	nodes: ClusterNode[];
	guests: ClusterGuest[];
}

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

/** Parses `pvecm status`: the cluster's name and whether this member is quorate; throws when it says neither (not a cluster member). */
export function parsePvecmStatus(text: string): { name: string; quorate: boolean } {
	const name = /^Name:\s+(\S+)/m.exec(text)?.[1];
	const quorate = /^Quorate:\s+(Yes|No)\s*$/m.exec(text)?.[1];
	if (!name || !quorate) throw new ProxmoxError(`pvecm status: no cluster name or quorum line in: ${text.slice(0, 200)}`);
	return { name, quorate: quorate === 'Yes' };
}

/** The rows of `pvesh get /cluster/resources --output-format json`; throws with the reason on anything else. */
export function clusterResourceRows(text: string): ClusterResource[] {
	let data: unknown;
	try {
		data = JSON.parse(text);
	} catch {
		throw new ProxmoxError(`pvesh get /cluster/resources: output is not JSON: ${text.slice(0, 200)}`);
	}
	const r = z.array(resourceSchema).safeParse(data);
	if (!r.success) throw new ProxmoxError(`pvesh get /cluster/resources: unexpected output: ${r.error.issues[0].message}`);
	return r.data;
}

/** An online node's memory, CPU and uptime from its `/cluster/resources` row (nothing when the row has none). */
function nodeLoad(e: ClusterResource): Partial<ClusterNode> {
	if (e.status !== 'online' || e.maxmem === undefined) return {};
	return {
		freeMemMb: Math.max(0, Math.round((e.maxmem - (e.mem ?? 0)) / MiB)),
		totalMemMb: Math.round(e.maxmem / MiB),
		cpuPct: round((e.cpu ?? 0) * 100),
		...(e.maxcpu !== undefined ? { cpus: e.maxcpu } : {}),
		...(e.uptime !== undefined ? { uptimeSec: Math.round(e.uptime) } : {})
	};
}

/** Parses `pvesh get /cluster/resources --output-format json` into nodes and guests. */
export function parseClusterResources(text: string): { nodes: ClusterNode[]; guests: ClusterGuest[] } {
	const nodes: ClusterNode[] = [];
	const guests: ClusterGuest[] = [];
	for (const e of clusterResourceRows(text)) {
		if (e.type === 'node' && e.node) nodes.push({ node: e.node, status: e.status ?? 'unknown', ...nodeLoad(e) });
		if ((e.type === 'lxc' || e.type === 'qemu') && e.node && e.vmid !== undefined) {
			guests.push({
				type: e.type,
				vmid: e.vmid,
				node: e.node,
				name: e.name ?? `${e.type === 'lxc' ? 'CT' : 'VM'}${e.vmid}`,
				status: e.status ?? 'unknown',
				template: e.template === 1,
				cpuPercent: round((e.cpu ?? 0) * 100),
				cpus: e.maxcpu ?? null,
				memUsedMb: Math.round((e.mem ?? 0) / MiB),
				memLimitMb: e.maxmem !== undefined ? Math.round(e.maxmem / MiB) : null,
				diskLimitGb: e.maxdisk ? round(e.maxdisk / GiB, 2) : null,
				uptimeSec: Math.round(e.uptime ?? 0),
				tags: e.tags?.split(/[;,\s]+/).filter(Boolean) ?? []
			});
		}
	}
	nodes.sort((a, b) => a.node.localeCompare(b.node));
	guests.sort((a, b) => a.vmid - b.vmid);
	return { nodes, guests };
}

/** `pvesh get /cluster/resources` (every type): answers on a standalone PVE 8 node too, listing its own guests. */
export const RESOURCES_ARGV: readonly string[] = ['pvesh', 'get', '/cluster/resources', '--output-format', 'json'];

/**
 * Reads the cluster as the member behind `client` sees it (two commands on one connection);
 * `resources`: the output of RESOURCES_ARGV when the caller is reading it already.
 */
export async function readClusterView(client: Client, member: string, opts: RunOptions = {}, resources?: Promise<string>): Promise<ClusterView> {
	const [status, rows] = await Promise.all([
		// `pvecm status` execs `corosync-quorumtool -siH`, which exits 2 (EXIT_NOT_QUORATE) after printing
		// the whole status when the member is not quorate: that is an answer, not a failure.
		runChecked(client, ['pvecm', 'status'], { ...opts, okExit: [0, PVECM_NOT_QUORATE] }),
		resources ?? runChecked(client, RESOURCES_ARGV, opts)
	]);
	return { ...parsePvecmStatus(status), readFrom: member, ...parseClusterResources(rows) };
}
