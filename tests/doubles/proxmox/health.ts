// The fake node's health state (health.json; fake/health.mjs reads it): what tests set for the
// node-health reads — storage fill, backup volumes, backup jobs with retention, tasks with their
// logs, pending apt updates, ZFS pools, disks with SMART — and the host's service states.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readContainers } from './state';

export const GiB = 1024 ** 3;

/** Overrides of one storage (default figures: fake/model.mjs storages()); backups on it always count as used. */
export interface StorageKnobs {
	total?: number;
	/** bytes used by everything but backups */
	other?: number;
	/** set by fill(): used = fill × total, of which `fillBackups` were the backups then (deleting them frees it) */
	fill?: number;
	fillBackups?: number;
	/** the guest disks' bytes on it when fill() was called (destroying a guest frees its share) */
	fillGuests?: number;
	active?: 0 | 1;
	enabled?: 0 | 1;
}

/** A backup volume as `…/storage/<s>/content --content backup` lists it (PVE 8/9 field names). */
export interface BackupVolume {
	volid: string;
	vmid?: number;
	/** lxc | qemu */
	subtype?: string;
	size: number;
	/** epoch seconds */
	ctime: number;
	format?: string;
	notes?: string;
	protected?: 0 | 1;
	verification?: { state: 'ok' | 'failed'; upid?: string };
}

/** A backup job as `/cluster/backup` lists it. */
export interface BackupJob {
	id: string;
	schedule: string;
	storage: string;
	enabled?: 0 | 1;
	all?: 0 | 1;
	vmid?: string;
	mode?: 'snapshot' | 'suspend' | 'stop';
	/** `keep-last=3,keep-weekly=2`, or parsed */
	'prune-backups'?: string | Record<string, number>;
	'next-run'?: number;
	comment?: string;
	type?: 'vzdump';
}

/** A task: status undefined while running, `OK` or its error once ended; `log` its lines. */
export interface PveTask {
	upid: string;
	node: string;
	type: string;
	id: string;
	user: string;
	pid: number;
	pstart: number;
	starttime: number;
	endtime?: number;
	status?: string;
	log: string[];
}
export type SeedTask = Partial<Omit<PveTask, 'upid'>> & { type: string; log?: string[] };

export interface AptPackage {
	Package: string;
	Version: string;
	OldVersion: string;
	Origin?: string;
	Title?: string;
	Priority?: string;
}

export interface ZPool {
	name: string;
	/** bytes */
	size: number;
	alloc: number;
	health: 'ONLINE' | 'DEGRADED' | 'FAULTED' | 'OFFLINE' | 'UNAVAIL' | 'SUSPENDED';
	frag?: number;
	/** `zpool status` text of this pool when it has something to say (shown by `-x`) */
	status?: string;
}

export interface Disk {
	devpath: string;
	type: 'hdd' | 'ssd' | 'nvme' | 'usb' | 'unknown';
	model?: string;
	serial?: string;
	size: number;
	health: string;
	wearout?: number | 'N/A';
	used?: string;
	gpt?: 0 | 1;
}

export interface HealthState {
	storages?: Record<string, StorageKnobs>;
	backups?: Record<string, BackupVolume[]>;
	jobs?: BackupJob[];
	tasks?: PveTask[];
	/** pending updates as of the last package-list refresh (`/nodes/<n>/apt/update`); the host's dist-upgrade installs them */
	apt?: AptPackage[];
	/** what the mirror offers that the node has not seen yet: a refresh (apt-get update, POST apt/update) makes it pending */
	aptRepo?: AptPackage[];
	zpools?: ZPool[];
	disks?: Disk[];
}

const file = (stateDir: string) => join(stateDir, 'health.json');

export async function readHealth(stateDir: string): Promise<HealthState> {
	return JSON.parse(await readFile(file(stateDir), 'utf8').catch(() => '{}')) as HealthState;
}

async function writeHealth(stateDir: string, h: HealthState): Promise<void> {
	await mkdir(stateDir, { recursive: true });
	const tmp = `${file(stateDir)}.${process.pid}.tmp`;
	await writeFile(tmp, JSON.stringify(h, null, 2) + '\n');
	await rename(tmp, file(stateDir));
}

/** Replaces the given parts of the health state (null: back to the default). */
export async function setHealthIn(stateDir: string, patch: { [K in keyof HealthState]?: HealthState[K] | null }): Promise<void> {
	const h = await readHealth(stateDir);
	for (const [k, v] of Object.entries(patch) as [keyof HealthState, unknown][]) {
		if (v === null) delete h[k];
		else (h as Record<string, unknown>)[k] = v;
	}
	await writeHealth(stateDir, h);
}

/**
 * The bytes the CTs' disks on a storage hold (local-lvm: a thin volume holds 18 % of its size;
 * keep in step with fake/model.mjs storages()).
 */
async function guestBytes(stateDir: string, storage: string): Promise<number> {
	if (storage !== 'local-lvm') return 0;
	const cts = await readContainers(stateDir);
	const gb = (rootfs: string) => Number(/size=(\d+(?:\.\d+)?)G/.exec(rootfs)?.[1] ?? 8);
	return Math.floor(cts.filter((c) => String(c.rootfs).startsWith('local-lvm:')).reduce((a, c) => a + gb(String(c.rootfs)) * GiB * 0.18, 0));
}

/** The storage is `fraction` full now (0–1), its backups and guest disks included; later deletions of backups or guests free their space. */
export async function fillIn(stateDir: string, storage: string, fraction: number, total?: number): Promise<void> {
	const h = await readHealth(stateDir);
	const backups = (h.backups?.[storage] ?? []).reduce((a, v) => a + v.size, 0);
	const was = h.storages?.[storage] ?? {};
	const guests = await guestBytes(stateDir, storage);
	h.storages = {
		...h.storages,
		[storage]: { ...was, ...(total !== undefined ? { total } : {}), fill: fraction, fillBackups: backups, fillGuests: guests }
	};
	await writeHealth(stateDir, h);
}

const hex = (n: number, w = 8) => (n >>> 0).toString(16).toUpperCase().padStart(w, '0');

/** Adds a task (ended unless `status` is left out with `running: true`) and returns its UPID. */
export async function addTaskIn(stateDir: string, node: string, seed: SeedTask & { running?: boolean }): Promise<string> {
	const h = await readHealth(stateDir);
	const starttime = seed.starttime ?? Math.floor(Date.now() / 1000) - 600;
	const pid = seed.pid ?? 4000 + (h.tasks?.length ?? 0);
	const pstart = seed.pstart ?? 1_234_567;
	const id = seed.id ?? '';
	const user = seed.user ?? 'root@pam';
	const upid = `UPID:${node}:${hex(pid)}:${hex(pstart)}:${hex(starttime)}:${seed.type}:${id}:${user}:`;
	const { running, ...rest } = seed;
	const task: PveTask = {
		node,
		id,
		user,
		pid,
		pstart,
		starttime,
		log: [],
		...rest,
		upid,
		...(running ? {} : { endtime: seed.endtime ?? starttime + 30, status: seed.status ?? 'OK' })
	};
	if (running) delete task.status;
	h.tasks = [...(h.tasks ?? []), task];
	await writeHealth(stateDir, h);
	return upid;
}

/** The host's and a guest's units before any change (keep in step with fake/systemctl.mjs HOST_UNITS, GUEST_UNITS). */
const HOST_UNITS = ['pve-cluster', 'pvedaemon', 'pveproxy', 'pvestatd', 'pve-firewall', 'ssh', 'cron', 'chrony'];
const GUEST_UNITS = ['ssh', 'cron', 'postfix', 'systemd-networkd'];

/** Where a scope keeps its units and journal: the host's state dir, or a CT's. */
const scopeDir = (stateDir: string, vmid?: number) => (vmid === undefined ? stateDir : join(stateDir, 'guests', String(vmid)));

/**
 * A service's state as systemctl keeps it (units.json) on the host (`/nodes/<n>/services` lists
 * those) or, with `vmid`, inside that CT (a unit not there yet is added, e.g. `caddy`).
 */
export async function setServiceIn(stateDir: string, name: string, state: { active: boolean; enabled?: boolean }, vmid?: number): Promise<void> {
	const dir = scopeDir(stateDir, vmid);
	await mkdir(dir, { recursive: true });
	const path = join(dir, 'units.json');
	const defaults = vmid === undefined ? HOST_UNITS : GUEST_UNITS;
	const stored =
		(JSON.parse(await readFile(path, 'utf8').catch(() => 'null')) as Record<string, Record<string, unknown>> | null) ??
		Object.fromEntries(defaults.map((u, i) => [u, { description: u, active: true, enabled: true, since: Date.parse('2025-01-06T08:14:03Z'), pid: 700 + i }]));
	stored[name] = {
		...(stored[name] ?? { description: name, since: Date.now(), pid: 900 }),
		active: state.active,
		enabled: state.enabled ?? stored[name]?.enabled ?? true
	};
	const tmp = `${path}.${process.pid}.tmp`;
	await writeFile(tmp, JSON.stringify(stored, null, 2) + '\n');
	await rename(tmp, path);
}

/** Lines of a unit's journal on the host or in a CT (journal.json, what `journalctl -u` prints), appended as given. */
export async function addJournalIn(stateDir: string, unit: string, lines: string[], vmid?: number): Promise<void> {
	const dir = scopeDir(stateDir, vmid);
	await mkdir(dir, { recursive: true });
	const path = join(dir, 'journal.json');
	const j = JSON.parse(await readFile(path, 'utf8').catch(() => '{}')) as Record<string, string[]>;
	const key = unit.replace(/\.service$/, '');
	j[key] = [...(j[key] ?? []), ...lines];
	const tmp = `${path}.${process.pid}.tmp`;
	await writeFile(tmp, JSON.stringify(j, null, 2) + '\n');
	await rename(tmp, path);
}

/** A unit's state on the host or in a CT as systemctl keeps it, or null when it has none. */
export async function serviceIn(stateDir: string, name: string, vmid?: number): Promise<{ active: boolean; enabled: boolean } | null> {
	const units = JSON.parse(await readFile(join(scopeDir(stateDir, vmid), 'units.json'), 'utf8').catch(() => 'null')) as Record<
		string,
		{ active: boolean; enabled: boolean }
	> | null;
	const u = units?.[name.replace(/\.service$/, '')];
	return u ? { active: u.active, enabled: u.enabled } : null;
}
