// Parsers for the node-health reads (proxmox/health-reads.ts): PVE's JSON (PVE 8 and 9 field
// names, checked against pve-manager's and pve-storage's API schemas) and `zpool` text, each
// turned into a few lines for the model. Output that does not parse throws a ProxmoxError: the
// read is then unknown, with the reason, never "none".
import { z } from 'zod';
import { ProxmoxError } from './inventory';

const GiB = 1024 ** 3;
/** A number pvesh may print as a JSON number or a numeric string. */
const num = z.union([
	z.number(),
	z
		.string()
		.regex(/^-?\d+(\.\d+)?$/)
		.transform(Number)
]);
/** A boolean PVE prints as 0/1 (or a string of them). */
const flag = z.union([z.number(), z.boolean(), z.string()]).transform((v) => v === true || v === 1 || v === '1');

export const gib = (bytes: number) => `${(bytes / GiB).toFixed(1)}`;
/** `2026-12-06 02:00` (UTC) from epoch seconds. */
export const when = (epochS: number) => new Date(epochS * 1000).toISOString().slice(0, 16).replace('T', ' ');

function parseJson<T>(text: string, schema: z.ZodType<T>, what: string): T {
	let data: unknown;
	try {
		data = JSON.parse(text);
	} catch {
		throw new ProxmoxError(`${what}: the output is not JSON (${text.trim().slice(0, 120) || 'empty'})`);
	}
	const r = schema.safeParse(data);
	if (!r.success) {
		const i = r.error.issues[0];
		throw new ProxmoxError(`${what}: unexpected output at ${i.path.join('.') || '(root)'}: ${i.message}`);
	}
	return r.data;
}

/** At most `n` lines, then how many more. */
function capped(lines: string[], n: number, more: string): string[] {
	return lines.length > n ? [...lines.slice(0, n), `… and ${lines.length - n} more ${more}`] : lines;
}

// GET /nodes/{node}/storage (pve-storage PVE/API2/Storage/Status.pm index): total/used/avail in
// bytes, active/enabled/shared 0|1, content a comma list; a storage that is not active has no figures.
const storageRow = z.looseObject({
	storage: z.string().min(1),
	type: z.string().optional(),
	content: z.string().optional(),
	active: flag.optional(),
	enabled: flag.optional(),
	shared: flag.optional(),
	total: num.optional(),
	used: num.optional(),
	avail: num.optional()
});
export type StorageRow = z.output<typeof storageRow>;
/** What a storage line needs of a row (the inventory keeps these on the host entity). */
export type StorageFigures = {
	storage: string;
	type?: string;
	content?: string;
	active?: boolean;
	enabled?: boolean;
	shared?: boolean;
	total?: number;
	used?: number;
	avail?: number;
};

export function parseStorage(text: string): StorageRow[] {
	return parseJson(text, z.array(storageRow), 'pvesh get /nodes/<node>/storage');
}

/** `local: 92% used (85.1/92.5 GiB, 7.4 free), +3.1 GiB/day over 5 h; dir backup,iso,vztmpl` — unknown (not zero) when the storage is not active. */
export function storageLine(s: StorageFigures, trend?: string): string {
	const kind = [s.type, s.content, s.shared ? 'shared' : ''].filter(Boolean).join(' ');
	if (s.enabled === false) return `${s.storage}: disabled (${kind})`;
	if (s.active === false || s.total === undefined || s.used === undefined || !s.total) return `${s.storage}: not active, usage unknown (${kind})`;
	const pct = Math.round((s.used / s.total) * 100);
	const free = s.avail ?? s.total - s.used;
	return `${s.storage}: ${pct}% used (${gib(s.used)}/${gib(s.total)} GiB, ${gib(free)} free)${trend ? `, ${trend}` : ''}; ${kind}`;
}

export function storageSummary(text: string): string {
	const rows = parseStorage(text);
	if (!rows.length) return 'no storages configured on this node';
	return rows.map((s) => storageLine(s)).join('\n');
}

// GET /nodes/{node}/storage/{storage}/content (pve-storage PVE/API2/Storage/Content.pm index).
const volumeRow = z.looseObject({
	volid: z.string().min(1),
	size: num.optional(),
	ctime: num.optional(),
	vmid: num.optional(),
	notes: z.string().optional(),
	protected: flag.optional(),
	subtype: z.string().optional(),
	format: z.string().optional(),
	verification: z.looseObject({ state: z.string().optional() }).optional()
});
type Volume = z.output<typeof volumeRow>;

const guestOf = (v: Volume) => (v.vmid === undefined ? 'no guest' : `${v.subtype === 'qemu' ? 'VM' : v.subtype === 'lxc' ? 'CT' : 'guest'} ${v.vmid}`);
const volumeLine = (v: Volume) =>
	[
		v.volid,
		v.size !== undefined ? `${gib(v.size)} GiB` : 'size unknown',
		v.ctime !== undefined ? when(v.ctime) : 'time unknown',
		v.protected ? 'protected' : '',
		v.verification?.state ? `verify ${v.verification.state}` : '',
		v.notes ? JSON.stringify(v.notes.slice(0, 60)) : ''
	]
		.filter(Boolean)
		.join(' ');

/** Backups on a storage: one line per volume for one guest; else per guest their count, size and newest/oldest. */
export function backupSummary(text: string, storage: string, vmid?: string): string {
	const vols = parseJson(text, z.array(volumeRow), `pvesh get …/storage/${storage}/content`).sort((a, b) => (b.ctime ?? 0) - (a.ctime ?? 0));
	const total = vols.reduce((t, v) => t + (v.size ?? 0), 0);
	const head = `${storage}: ${vols.length} backup${vols.length === 1 ? '' : 's'}${vmid ? ` of guest ${vmid}` : ''}, ${gib(total)} GiB`;
	if (!vols.length) return head;
	if (vmid) return [head + ' (newest first):', ...capped(vols.map(volumeLine), 30, 'backups')].join('\n');
	const by = new Map<string, Volume[]>();
	for (const v of vols) by.set(guestOf(v), [...(by.get(guestOf(v)) ?? []), v]);
	const lines = [...by].map(([g, vs]) => {
		const size = vs.reduce((t, v) => t + (v.size ?? 0), 0);
		const times = vs.map((v) => v.ctime).filter((t): t is number => t !== undefined);
		const span = times.length ? `, newest ${when(Math.max(...times))}, oldest ${when(Math.min(...times))}` : '';
		const prot = vs.filter((v) => v.protected).length;
		return `${g}: ${vs.length} (${gib(size)} GiB${span}${prot ? `, ${prot} protected` : ''})`;
	});
	return [head + ' by guest (name a vmid to list its volumes):', ...capped(lines, 40, 'guests')].join('\n');
}

// GET /cluster/backup (pve-manager PVE/API2/Backup.pm index): the jobs of jobs.cfg; `prune-backups`
// is a property string or (parsed) an object; `next-run` epoch seconds (PVE 7.1+).
const KEEPS = ['keep-all', 'keep-last', 'keep-hourly', 'keep-daily', 'keep-weekly', 'keep-monthly', 'keep-yearly'] as const;
const jobRow = z.looseObject({
	id: z.string().optional(),
	schedule: z.string().optional(),
	starttime: z.string().optional(),
	dow: z.string().optional(),
	storage: z.string().optional(),
	enabled: flag.optional(),
	all: flag.optional(),
	vmid: z.union([z.string(), z.number()]).optional(),
	pool: z.string().optional(),
	exclude: z.string().optional(),
	mode: z.string().optional(),
	node: z.string().optional(),
	'prune-backups': z.union([z.string(), z.record(z.string(), z.union([z.string(), z.number()]))]).optional(),
	maxfiles: num.optional(),
	'next-run': num.optional(),
	comment: z.string().optional()
});

/** `keep-last=3, keep-weekly=2` from a property string or an object. */
export function retentionOf(r: string | Record<string, string | number> | undefined, maxfiles?: number): string {
	const o: Record<string, string> =
		typeof r === 'string'
			? Object.fromEntries(r.split(',').map((kv) => kv.split('=') as [string, string]))
			: Object.fromEntries(Object.entries(r ?? {}).map(([k, v]) => [k, String(v)]));
	const parts = KEEPS.filter((k) => o[k] !== undefined).map((k) => `${k}=${o[k]}`);
	if (parts.length) return parts.join(', ');
	if (maxfiles !== undefined) return `maxfiles=${maxfiles}`;
	return "the storage's own retention";
}

export function backupJobsSummary(text: string): string {
	const jobs = parseJson(text, z.array(jobRow), 'pvesh get /cluster/backup');
	if (!jobs.length) return 'no backup jobs configured';
	return jobs
		.map((j) => {
			const guests = j.all ? `all guests${j.exclude ? ` except ${j.exclude}` : ''}` : j.pool ? `pool ${j.pool}` : `guests ${j.vmid ?? '?'}`;
			const when_ = j.schedule ?? [j.dow, j.starttime].filter(Boolean).join(' ') ?? '?';
			return [
				`${j.id ?? '(no id)'}: ${j.enabled === false ? 'DISABLED' : 'enabled'}, ${when_ || '?'} → ${j.storage ?? '?'}`,
				guests,
				j.node ? `node ${j.node}` : '',
				j.mode ? `mode ${j.mode}` : '',
				`keep ${retentionOf(j['prune-backups'], j.maxfiles)}`,
				j['next-run'] !== undefined ? `next ${when(j['next-run'])}` : '',
				j.comment ? JSON.stringify(j.comment.slice(0, 60)) : ''
			]
				.filter(Boolean)
				.join('; ');
		})
		.join('\n');
}

// GET /nodes/{node}/tasks (pve-manager PVE/API2/Tasks.pm node_tasks): with errors=1 only tasks whose status is not OK.
const taskRow = z.looseObject({
	upid: z.string().min(1),
	type: z.string().optional(),
	id: z.string().optional(),
	user: z.string().optional(),
	starttime: num.optional(),
	endtime: num.optional(),
	status: z.string().optional()
});

export function failedTasksSummary(text: string, limit: number): string {
	const tasks = parseJson(text, z.array(taskRow), 'pvesh get /nodes/<node>/tasks');
	if (!tasks.length) return `no failed tasks among the node's recent tasks`;
	const lines = tasks.map(
		(t) => `${t.starttime !== undefined ? when(t.starttime) : '?'} ${t.type ?? '?'}${t.id ? ` ${t.id}` : ''}: ${t.status ?? 'status unknown'} — ${t.upid}`
	);
	return [
		`${tasks.length} failed task${tasks.length === 1 ? '' : 's'} (newest first${tasks.length >= limit ? `, the last ${limit}` : ''}; task_log reads one):`,
		...lines
	].join('\n');
}

// GET /nodes/{node}/tasks/{upid}/status and …/log ([{ n, t }], from line `start`, `limit` lines).
const taskStatus = z.looseObject({ status: z.string(), exitstatus: z.string().optional(), type: z.string().optional(), id: z.string().optional() });
const logRow = z.looseObject({ n: num, t: z.string() });
const ERRORISH = /\b(error|failed|failure|unable|cannot|can't|no space|not found|denied|locked|timeout|timed out)\b/i;

export function taskLogSummary(statusText: string, logText: string, lines: number): string {
	const st = parseJson(statusText, taskStatus, 'pvesh get …/tasks/<upid>/status');
	const log = parseJson(logText, z.array(logRow), 'pvesh get …/tasks/<upid>/log').map((l) => l.t);
	const head = `${st.type ?? 'task'}${st.id ? ` ${st.id}` : ''}: ${st.status === 'running' ? 'still running' : `ended: ${st.exitstatus ?? 'exit status unknown'}`}; ${log.length} log lines`;
	const tail = log.slice(-lines);
	// Error lines earlier than the tail are the likeliest cause: shown first (at most 10).
	const earlier = log
		.slice(0, -lines)
		.filter((l) => ERRORISH.test(l))
		.slice(-10);
	return [
		head,
		...(earlier.length ? ['errors earlier in the log:', ...earlier, '…'] : []),
		...(tail.length < log.length ? [`last ${tail.length} lines:`] : []),
		...tail
	].join('\n');
}

// GET /nodes/{node}/apt/update (pve-manager PVE/API2/APT.pm list_updates): the packages the last `apt update` found upgradable.
const aptRow = z.looseObject({
	Package: z.string().min(1),
	Version: z.string().optional(),
	OldVersion: z.string().optional(),
	Origin: z.string().optional(),
	Priority: z.string().optional()
});
/** A kernel package (a new one runs only after a reboot): Proxmox's (8, 9: proxmox-kernel-*; 7: pve-kernel-*) or Debian's. */
export const KERNEL = /^(proxmox-kernel-|pve-kernel-|linux-image-)/;

export function updatesSummary(text: string): string {
	const pkgs = parseJson(text, z.array(aptRow), 'pvesh get /nodes/<node>/apt/update');
	if (!pkgs.length) return 'no pending updates (as of the last package-list refresh)';
	const pve = pkgs.filter((p) => /proxmox/i.test(p.Origin ?? ''));
	const kernel = pkgs.filter((p) => KERNEL.test(p.Package));
	const line = (p: z.output<typeof aptRow>) => `${p.Package} ${p.OldVersion ?? '?'} → ${p.Version ?? '?'}`;
	const order = [...pve, ...pkgs.filter((p) => !pve.includes(p))];
	return [
		`${pkgs.length} pending update${pkgs.length === 1 ? '' : 's'} (as of the last package-list refresh), ${pve.length} from Proxmox${kernel.length ? `; a new kernel (${kernel.map((k) => k.Package).join(', ')}): reboot needed to use it` : ''}:`,
		...capped(order.map(line), 25, 'packages')
	].join('\n');
}

/** `zpool status -x` and `zpool list -H -p -o name,size,alloc,free,frag,cap,health`. */
export function zfsSummary(statusText: string, listText: string): string {
	const status = statusText.trim();
	const rows = listText
		.split('\n')
		.filter((l) => l.trim())
		.map((l) => {
			const f = l.split('\t');
			if (f.length !== 7 || !/^\d+$/.test(f[1]) || !/^\d+$/.test(f[2])) throw new ProxmoxError(`zpool list: unexpected line: ${l.slice(0, 120)}`);
			const [name, size, alloc, free, frag, cap, health] = f;
			return `${name}: ${health}, ${cap}% used (${gib(Number(alloc))}/${gib(Number(size))} GiB, ${gib(Number(free))} free), frag ${frag === '-' ? '?' : `${frag}%`}`;
		});
	if (!rows.length && /no pools available/i.test(status)) return 'no ZFS pools on this node';
	if (/^all pools are healthy$/i.test(status)) return ['all pools healthy', ...rows].join('\n');
	if (!status) throw new ProxmoxError('zpool status -x: no output');
	// Not healthy: the pool's own words (state, status, action, errors) and every device not ONLINE.
	const detail = status
		.split('\n')
		.filter((l) => /^\s*(pool|state|status|action|scan|errors):/.test(l) || (/\b(DEGRADED|FAULTED|OFFLINE|UNAVAIL|REMOVED)\b/.test(l) && !/^\s*state:/.test(l)))
		.map((l) => l.trim());
	return [...rows, 'zpool status -x:', ...capped(detail, 30, 'lines')].join('\n');
}

// GET /nodes/{node}/disks/list (pve-storage PVE/API2/Disks.pm list): health is SMART's verdict (PASSED, OK, FAILED, UNKNOWN); wearout the % used up (or N/A).
const diskRow = z.looseObject({
	devpath: z.string().min(1),
	type: z.string().optional(),
	model: z.string().optional(),
	size: num.optional(),
	health: z.string().optional(),
	wearout: z.union([z.number(), z.string()]).optional(),
	used: z.string().optional()
});

export function disksSummary(text: string): string {
	const disks = parseJson(text, z.array(diskRow), 'pvesh get /nodes/<node>/disks/list');
	if (!disks.length) return 'no disks listed';
	const bad = disks.filter((d) => d.health && !/^(PASSED|OK)$/i.test(d.health));
	const lines = disks.map((d) =>
		[
			`${d.devpath} ${d.type ?? ''}`.trim(),
			d.model ?? '',
			d.size !== undefined ? `${(d.size / 1e9).toFixed(0)} GB` : '',
			`SMART ${d.health ?? 'unknown'}`,
			d.wearout !== undefined && d.wearout !== 'N/A' ? `wearout ${d.wearout}%` : '',
			d.used ? `used by ${d.used}` : ''
		]
			.filter(Boolean)
			.join(', ')
	);
	return [
		`${disks.length} disk${disks.length === 1 ? '' : 's'}, ${bad.length ? `${bad.length} not healthy (${bad.map((d) => `${d.devpath} ${d.health}`).join(', ')})` : 'SMART healthy'}:`,
		...lines
	].join('\n');
}

// GET /nodes/{node}/services (pve-manager PVE/API2/Services.pm index): state running|dead|…, unit-state enabled|disabled|masked|not-found.
const serviceRow = z.looseObject({
	service: z.string().min(1),
	state: z.string().optional(),
	'active-state': z.string().optional(),
	'sub-state': z.string().optional(),
	'unit-state': z.string().optional()
});

export function servicesSummary(text: string): string {
	const rows = parseJson(text, z.array(serviceRow), 'pvesh get /nodes/<node>/services');
	const running = rows.filter((s) => s.state === 'running');
	const other = rows.filter((s) => s.state !== 'running');
	const line = (s: z.output<typeof serviceRow>) =>
		`${s.service} ${s.state ?? 'state unknown'}${s['active-state'] ? ` (${s['active-state']}/${s['sub-state'] ?? '?'}, ${s['unit-state'] ?? '?'})` : ''}`;
	return [`${running.length} of ${rows.length} PVE services running${other.length ? '; not running:' : ''}`, ...other.map(line)].join('\n');
}
