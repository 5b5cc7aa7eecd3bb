// Reads a Proxmox node's inventory over one SSH connection and parses PVE's output formats.
import type { Client } from 'ssh2';
import { z } from 'zod';
import { execArgv, type ExecResult } from '../ssh/client';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

/** A number that pvesh may print as a JSON number or (older versions) a numeric string. */
const num = z.union([
	z.number(),
	z
		.string()
		.regex(/^-?\d+(\.\d+)?$/)
		.transform(Number)
]);

const nodeSchema = z.looseObject({
	node: z.string().min(1),
	status: z.string().optional(),
	cpu: num.optional(),
	maxcpu: num.optional(),
	mem: num.optional(),
	maxmem: num.optional(),
	uptime: num.optional()
});
export type PveNode = z.infer<typeof nodeSchema>;

const lxcSchema = z.looseObject({
	vmid: num.pipe(z.number().int().min(100)),
	name: z.string().optional(),
	status: z.string(),
	cpu: num.optional(),
	cpus: num.optional(),
	mem: num.optional(),
	maxmem: num.optional(),
	maxswap: num.optional(),
	disk: num.optional(),
	maxdisk: num.optional(),
	uptime: num.optional(),
	lock: z.string().optional(),
	tags: z.string().optional()
});
export type PveLxc = z.infer<typeof lxcSchema>;

export class ProxmoxError extends Error {}

/**
 * The host gave no answer to a command: it timed out, or the channel closed without an exit status
 * (a dropped connection). Unknown, never "absent": nothing about the guest may be concluded from it.
 */
export class NoAnswerError extends ProxmoxError {}

function parseJsonArray<T>(text: string, item: z.ZodType<T>, what: string): T[] {
	let data: unknown;
	try {
		data = JSON.parse(text);
	} catch {
		throw new ProxmoxError(`${what}: output is not JSON: ${text.slice(0, 200)}`);
	}
	const r = z.array(item).safeParse(data);
	if (!r.success) {
		const i = r.error.issues[0];
		throw new ProxmoxError(`${what}: unexpected output at ${i.path.join('.') || '(root)'}: ${i.message}`);
	}
	return r.data;
}

/** Parses `pvesh get /nodes --output-format json`. */
export function parseNodes(text: string): PveNode[] {
	return parseJsonArray(text, nodeSchema, 'pvesh get /nodes');
}

/** Parses `pvesh get /nodes/<node>/lxc --output-format json`. */
export function parseLxcList(text: string): PveLxc[] {
	return parseJsonArray(text, lxcSchema, 'pvesh get /nodes/<node>/lxc');
}

/** Splits `key: value` lines (as `pct config` / `pct status --verbose` print them). */
export function parseKeyValues(text: string): Record<string, string> {
	const out: Record<string, string> = {};
	let last: string | undefined;
	for (const line of text.split('\n')) {
		if (/^\[.*\]\s*$/.test(line)) break; // snapshot sections follow the current config
		const m = /^([A-Za-z][\w.-]*):\s?(.*)$/.exec(line);
		if (m) {
			last = m[1];
			out[last] = m[2].trimEnd();
		} else if (last === 'description') out[last] += '\n' + line.trimEnd(); // multi-line description
	}
	if (out.description !== undefined) out.description = out.description.trim();
	return out;
}

/** `a=1,b=2` property strings (net0, rootfs options, features). A bare first word is `_`. */
export function parsePropertyString(s: string): Record<string, string> {
	const out: Record<string, string> = {};
	for (const part of s.split(',')) {
		if (!part) continue;
		const i = part.indexOf('=');
		if (i < 0) out._ = part;
		else out[part.slice(0, i)] = part.slice(i + 1);
	}
	return out;
}

/** `8G`, `512M`, `1T`, `1024K` → GB (2 decimals). */
export function sizeToGb(size: string): number | undefined {
	const m = /^(\d+(?:\.\d+)?)([KMGT]?)$/i.exec(size.trim());
	if (!m) return undefined;
	const f = { K: 1 / 1024 ** 2, M: 1 / 1024, G: 1, T: 1024, '': 1 / GiB }[m[2].toUpperCase() as 'K' | 'M' | 'G' | 'T' | ''];
	return round(Number(m[1]) * f, 2);
}

export interface NetConfig {
	name?: string;
	bridge?: string;
	hwaddr?: string;
	/** `10.0.0.5/24`, `dhcp`, `manual`, or undefined */
	ip?: string;
	gw?: string;
	ip6?: string;
	tag?: string;
}

const intStr = z.string().regex(/^\d+$/).transform(Number);
const configSchema = z.looseObject({
	hostname: z.string().min(1).optional(),
	cores: intStr.optional(),
	memory: intStr.optional(),
	swap: intStr.optional(),
	rootfs: z.string().optional(),
	ostype: z.string().optional(),
	arch: z.string().optional(),
	unprivileged: z.enum(['0', '1']).optional(),
	onboot: z.enum(['0', '1']).optional(),
	features: z.string().optional(),
	tags: z.string().optional(),
	description: z.string().optional(),
	lock: z.string().optional()
});

export interface CtConfig {
	hostname?: string;
	cores?: number;
	memoryMb?: number;
	swapMb?: number;
	rootfs?: { volume: string; sizeGb?: number };
	net0?: NetConfig;
	nets: Record<string, NetConfig>;
	ostype?: string;
	arch?: string;
	unprivileged: boolean;
	onboot: boolean;
	features?: string;
	tags: string[];
	description?: string;
	lock?: string;
	/** every key as printed */
	raw: Record<string, string>;
}

/** Parses `pct config <vmid>` output. */
export function parsePctConfig(text: string): CtConfig {
	const raw = parseKeyValues(text);
	const r = configSchema.safeParse(raw);
	if (!r.success) {
		const i = r.error.issues[0];
		throw new ProxmoxError(`pct config: bad value for ${i.path.join('.')}: ${i.message}`);
	}
	const c = r.data;
	const nets: Record<string, NetConfig> = {};
	for (const [k, v] of Object.entries(raw)) if (/^net\d+$/.test(k)) nets[k] = parsePropertyString(v);
	let rootfs: CtConfig['rootfs'];
	if (c.rootfs) {
		const p = parsePropertyString(c.rootfs);
		rootfs = { volume: p._ ?? c.rootfs, sizeGb: p.size ? sizeToGb(p.size) : undefined };
	}
	return {
		hostname: c.hostname,
		cores: c.cores,
		memoryMb: c.memory,
		swapMb: c.swap,
		rootfs,
		net0: nets.net0,
		nets,
		ostype: c.ostype,
		arch: c.arch,
		unprivileged: c.unprivileged === '1',
		onboot: c.onboot === '1',
		features: c.features,
		tags: c.tags ? c.tags.split(/[;,\s]+/).filter(Boolean) : [],
		description: c.description,
		lock: c.lock,
		raw
	};
}

/** Parses `pct status <vmid> [--verbose]`: `status` plus, verbose, the live counters. */
export function parsePctStatus(text: string): { status: string; values: Record<string, string> } {
	const values = parseKeyValues(text);
	const status = z.string().min(1).safeParse(values.status);
	if (!status.success) throw new ProxmoxError(`pct status: no status in output: ${text.slice(0, 200)}`);
	return { status: status.data, values };
}

export const round = (n: number, digits = 1): number => {
	const f = 10 ** digits;
	return Math.round(n * f) / f;
};

/** `45s`, `12m`, `3h 5m`, `14d 2h`. */
export function formatUptime(sec: number): string {
	const s = Math.max(0, Math.floor(sec));
	if (s < 60) return `${s}s`;
	const m = Math.floor(s / 60);
	if (m < 60) return `${m}m`;
	const h = Math.floor(m / 60);
	if (h < 24) return `${h}h ${m % 60}m`;
	return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** Builds a status entry from `pct status <vmid> --verbose` values (same fields as pvesh). */
export function statusEntry(vmid: number, values: Record<string, string>): PveLxc {
	const known = ['name', 'status', 'cpu', 'cpus', 'mem', 'maxmem', 'maxswap', 'disk', 'maxdisk', 'uptime', 'lock', 'tags'];
	const picked = Object.fromEntries(known.filter((k) => values[k] !== undefined && values[k] !== '').map((k) => [k, values[k]]));
	const r = lxcSchema.safeParse({ ...picked, vmid });
	if (!r.success) {
		const i = r.error.issues[0];
		throw new ProxmoxError(`pct status: bad value for ${i.path.join('.')}: ${i.message}`);
	}
	return r.data;
}

/** The addresses in a container's network config; DHCP/SLAAC addresses are unknown here. */
export function ipsOf(nets: Record<string, NetConfig>): { ips: string[]; ipMode: 'static' | 'dhcp' | 'manual' | 'none' } {
	const ips: string[] = [];
	let mode: 'static' | 'dhcp' | 'manual' | 'none' = 'none';
	for (const key of Object.keys(nets).sort()) {
		const ip = nets[key].ip;
		if (!ip) continue;
		if (ip === 'dhcp' || ip === 'manual') {
			if (mode === 'none') mode = ip;
		} else {
			ips.push(ip.split('/')[0]);
			mode = 'static';
		}
	}
	return { ips, ipMode: mode };
}

export interface HostAttributes {
	node: string;
	pveStatus: string;
	cpuPercent: number;
	maxcpu: number | null;
	memUsedMb: number;
	memLimitMb: number;
	uptimeSec: number;
	[k: string]: unknown;
}

export interface LxcAttributes {
	vmid: number;
	status: string;
	cpuPercent: number;
	cpus: number | null;
	cores: number | null;
	memUsedMb: number;
	memLimitMb: number | null;
	swapMb: number | null;
	diskUsedGb: number;
	diskLimitGb: number | null;
	uptimeSec: number;
	/** static addresses from the net config; empty when DHCP (unknown) */
	ips: string[];
	ipMode: 'static' | 'dhcp' | 'manual' | 'none';
	bridge: string | null;
	hwaddr: string | null;
	hostname: string | null;
	ostype: string | null;
	unprivileged: boolean | null;
	features: string | null;
	tags: string[];
	description?: string;
	lock?: string;
	/** why `pct config` could not be read (the rest comes from pvesh) */
	configError?: string;
	[k: string]: unknown;
}

export interface HostRecord {
	node: string;
	attributes: HostAttributes;
}

export interface LxcRecord {
	vmid: number;
	/** CT hostname, else its pvesh name, else `CT<vmid>` */
	name: string;
	attributes: LxcAttributes;
}

export interface Inventory {
	host: HostRecord;
	containers: LxcRecord[];
	/** nodes `pvesh get /nodes` listed: more than one = the host is a cluster member */
	nodeCount?: number;
}

/** Host attributes from a `/nodes` entry. */
export function hostAttributes(n: PveNode): HostAttributes {
	return {
		node: n.node,
		pveStatus: n.status ?? 'unknown',
		cpuPercent: round((n.cpu ?? 0) * 100),
		maxcpu: n.maxcpu ?? null,
		memUsedMb: Math.round((n.mem ?? 0) / MiB),
		memLimitMb: Math.round((n.maxmem ?? 0) / MiB),
		uptimeSec: Math.round(n.uptime ?? 0)
	};
}

/** Merges a pvesh status entry with the CT's parsed config (either may be partial). */
export function lxcAttributes(s: PveLxc, c: CtConfig | null, configError?: string): LxcAttributes {
	const net0 = c?.net0;
	const { ips, ipMode } = c ? ipsOf(c.nets) : { ips: [], ipMode: 'none' as const };
	const attrs: LxcAttributes = {
		vmid: s.vmid,
		status: s.status,
		cpuPercent: round((s.cpu ?? 0) * 100),
		cpus: s.cpus ?? c?.cores ?? null,
		cores: c?.cores ?? s.cpus ?? null,
		memUsedMb: Math.round((s.mem ?? 0) / MiB),
		memLimitMb: s.maxmem !== undefined ? Math.round(s.maxmem / MiB) : (c?.memoryMb ?? null),
		swapMb: c?.swapMb ?? (s.maxswap !== undefined ? Math.round(s.maxswap / MiB) : null),
		diskUsedGb: round((s.disk ?? 0) / GiB, 2),
		diskLimitGb: s.maxdisk ? round(s.maxdisk / GiB, 2) : (c?.rootfs?.sizeGb ?? null),
		uptimeSec: Math.round(s.uptime ?? 0),
		ips,
		ipMode,
		bridge: net0?.bridge ?? null,
		hwaddr: net0?.hwaddr ?? null,
		hostname: c?.hostname ?? s.name ?? null,
		ostype: c?.ostype ?? null,
		unprivileged: c ? c.unprivileged : null,
		features: c?.features ?? null,
		tags: c?.tags.length ? c.tags : (s.tags?.split(/[;,\s]+/).filter(Boolean) ?? [])
	};
	if (c?.description) attrs.description = c.description;
	const lock = s.lock ?? c?.lock;
	if (lock) attrs.lock = lock;
	if (configError) attrs.configError = configError;
	return attrs;
}

export interface RunOptions {
	timeoutMs?: number;
	signal?: AbortSignal;
	/** exit codes that still mean an answer (e.g. `pvecm status` exits 2 when not quorate); default just 0 */
	okExit?: readonly number[];
}

/** Runs one argv and returns stdout; an exit not in `okExit` (default 0), timeout or abort throws a ProxmoxError. */
export async function runChecked(client: Client, argv: readonly string[], opts: RunOptions = {}): Promise<string> {
	const r: ExecResult = await execArgv(client, argv, { timeoutMs: opts.timeoutMs ?? 30_000, signal: opts.signal });
	const cmd = argv.join(' ');
	if (r.timedOut) {
		const ms = opts.timeoutMs ?? 30_000;
		throw new NoAnswerError(`${cmd}: timed out after ${ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`}`);
	}
	if (r.aborted) throw new ProxmoxError(`${cmd}: aborted`);
	if (r.exitCode === null && r.signal === null) throw new NoAnswerError(`${cmd}: the connection closed before the command ended`);
	if (!(opts.okExit ?? [0]).includes(r.exitCode ?? -1)) {
		const why = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-3).join(' / ');
		throw new ProxmoxError(`${cmd}: exit ${r.exitCode ?? r.signal}${why ? `: ${why}` : ''}`);
	}
	return r.stdout;
}

/** Picks the node entry whose name is the host's, else the only one. */
export function pickNode(nodes: PveNode[], nodeName: string): PveNode {
	const exact = nodes.find((n) => n.node === nodeName);
	if (exact) return exact;
	if (nodes.length === 1) return nodes[0];
	throw new ProxmoxError(`pvesh get /nodes: no node named "${nodeName}" among ${nodes.map((n) => n.node).join(', ') || '(none)'}`);
}

/**
 * Reads the node's status, its containers, and each container's config over one connection.
 * A container whose config cannot be read keeps its pvesh data with `configError` set.
 */
export async function readInventory(client: Client, nodeName: string, opts: RunOptions = {}): Promise<Inventory> {
	const nodes = parseNodes(await runChecked(client, ['pvesh', 'get', '/nodes', '--output-format', 'json'], opts));
	const node = pickNode(nodes, nodeName);
	const list = parseLxcList(await runChecked(client, ['pvesh', 'get', `/nodes/${node.node}/lxc`, '--output-format', 'json'], opts)).sort(
		(a, b) => a.vmid - b.vmid
	);
	const containers: LxcRecord[] = [];
	// A few channels at a time: sshd limits sessions per connection (MaxSessions, default 10).
	for (let i = 0; i < list.length; i += 4) {
		const batch = list.slice(i, i + 4).map(async (s): Promise<LxcRecord> => {
			let config: CtConfig | null = null;
			let error: string | undefined;
			try {
				config = parsePctConfig(await runChecked(client, ['pct', 'config', String(s.vmid)], opts));
			} catch (e) {
				if (opts.signal?.aborted) throw e;
				error = (e as Error).message;
			}
			const attributes = lxcAttributes(s, config, error);
			return { vmid: s.vmid, name: attributes.hostname ?? s.name ?? `CT${s.vmid}`, attributes };
		});
		containers.push(...(await Promise.all(batch)));
	}
	return { host: { node: node.node, attributes: hostAttributes(node) }, containers, nodeCount: nodes.length };
}

/**
 * One container read live (`pct status --verbose`, then `pct config`), in the same record shape a
 * full sync writes; null when Proxmox says it does not exist.
 */
export async function readContainer(client: Client, vmid: number, opts: RunOptions = {}): Promise<LxcRecord | null> {
	// Both at once, on two channels of the connection: each is a separate `pct` run on the host.
	const [st, cf] = await Promise.allSettled([
		runChecked(client, ['pct', 'status', String(vmid), '--verbose'], opts),
		runChecked(client, ['pct', 'config', String(vmid)], opts)
	]);
	if (st.status === 'rejected') {
		if (st.reason instanceof ProxmoxError && /does not exist/.test(st.reason.message)) return null;
		throw st.reason;
	}
	if (cf.status === 'rejected') throw cf.reason;
	const status = parsePctStatus(st.value);
	const config = parsePctConfig(cf.value);
	const attributes = lxcAttributes(statusEntry(vmid, status.values), config);
	return { vmid, name: attributes.hostname ?? `CT${vmid}`, attributes };
}
