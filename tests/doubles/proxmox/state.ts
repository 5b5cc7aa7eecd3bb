// Types and state-dir helpers shared by the Proxmox double's server and tests.
// The on-disk format is owned by fake/*.mjs; keep CtState in sync with fake/pct-create.mjs.
import { mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export type ToolName =
	'pct' | 'pvesh' | 'pvecm' | 'pvesm' | 'systemctl' | 'apt-get' | 'pveam' | 'qm' | 'vzdump' | 'sha256sum' | 'curl' | 'zpool' | 'journalctl';

export interface CtState {
	vmid: number;
	hostname: string;
	status: 'running' | 'stopped';
	arch: string;
	cores: number;
	memory: number;
	swap: number;
	ostype: string;
	rootfs: string;
	unprivileged: 0 | 1;
	net0?: string;
	features?: string;
	onboot?: 0 | 1;
	tags?: string;
	lock?: string;
	ostemplate?: string;
	/** epoch ms of the last start, for uptime */
	startedAt?: number;
	/** the snapshot the current state descends from (`pct config` prints it) */
	parent?: string;
	snapshots?: Record<string, { snaptime: number; description: string; conf: Record<string, unknown> }>;
	description?: string;
	/** what the root disk holds, GiB (default 10–18 % of its size by vmid): `disk` while running, vzdump's bytes (fake/model.mjs ctUsedBytes) */
	diskUsedGb?: number;
}

/** A QEMU VM as fake/qm.mjs keeps it; `qm config` prints the config keys (scsi0 from disk + diskGb). */
export interface VmState {
	vmid: number;
	name: string;
	status: 'running' | 'stopped';
	cores: number;
	memory: number;
	/** scsi0's size */
	diskGb: number;
	lock?: string;
	startedAt?: number;
	/** scsi0's volume without size (default `local-lvm:vm-<vmid>-disk-0`) */
	disk?: string;
	/** the cloud image scsi0 was imported from */
	importedFrom?: string;
	ide2?: string;
	net0?: string;
	agent?: string;
	ciuser?: string;
	ipconfig0?: string;
	/** URL-encoded, as PVE stores them */
	sshkeys?: string;
	balloon?: number;
	onboot?: number;
	tags?: string;
	description?: string;
	template?: 1;
	parent?: string;
	snapshots?: Record<string, { snaptime: number; description: string; conf: Record<string, unknown> }>;
	/** the guest does not react to ACPI: `qm shutdown` waits out its timeout and fails */
	ignoresAcpi?: boolean;
	/** the agent is configured but does not answer (not installed in the guest) */
	agentDown?: boolean;
	/** what the agent reports as eth0's addresses, verbatim (default: the cloud-init address); the host's curl reaches the VM on these */
	agentAddresses?: string[];
	/**
	 * Before its address: the next `reads` network-get-interfaces answer eth0 with `addresses`
	 * (default: its link-local IPv6 only, as before a DHCP lease), each read counting one down.
	 */
	agentPending?: { reads: number; addresses?: string[] };
}

/** A cloud image on the fake host (`import-from`): a path or volume id, and its virtual size. */
export interface VmImage {
	path: string;
	sizeGb: number;
}
export type SeedVm = Pick<VmState, 'vmid' | 'name'> & Partial<Omit<VmState, 'vmid' | 'name'>>;

/**
 * What `curl` inside a CT gets from 127.0.0.1:<port> (and the host's curl from a VM at its agent's
 * address): one answer, or one per path (others 404).
 */
export interface HttpSite {
	status?: number;
	body?: string;
	/** accepts the connection and never answers: curl times out at --max-time (exit 28); VMs only */
	hang?: boolean;
	/** the service is not up yet: the next `refuseFirst` GETs find nothing listening (curl exit 7), each counting one down */
	refuseFirst?: number;
	paths?: Record<string, { status?: number; body?: string }>;
}

export interface SeedCt {
	vmid: number;
	hostname: string;
	status?: 'running' | 'stopped';
	cores?: number;
	memory?: number;
	swap?: number;
	diskGb?: number;
	ostype?: string;
	unprivileged?: 0 | 1;
	features?: string;
	/** defaults to `name=eth0,bridge=vmbr0,hwaddr=<derived>,ip=dhcp,type=veth` */
	net0?: string;
	/** where the rootfs lives: local-lvm (lvmthin, snapshots) by default, or local (dir, raw: no snapshots) */
	storage?: 'local-lvm' | 'local';
	lock?: string;
}

export interface FailFault {
	tool: ToolName;
	/** only fail when the space-joined argv contains this substring */
	match?: string;
	exitCode: number;
	stderr?: string;
}

/** Faults read by fake-pve.mjs on every invocation. */
export interface Faults {
	/**
	 * `pct create`: 'fail' = dies after some progress (exit 255); 'hang' = prints one line, then
	 * blocks until killed; `{ slow: ms }` = prints one line, then forks a task worker (as PVE does)
	 * that finishes the create `ms` later unless killed, while pct waits for it (see `tasks()`)
	 */
	create?: 'fail' | 'hang' | { slow: number };
	/** every invocation of this tool blocks (after logging argv) until killed */
	hang?: ToolName;
	/** matching invocations print `stderr` and exit with `exitCode` before doing anything */
	fail?: FailFault;
	/** matching invocations wait `ms` before doing anything (one slow tool) */
	slow?: SlowFault;
	/**
	 * A slow host (mid-backup, mid-scrub): EVERY invocation of a host tool (pct, qm, pvesh, pvesm,
	 * pveam, vzdump, …) waits `ms` before doing anything; tools run inside a guest (`pct exec`) do not
	 * wait again. Argv is logged when the tool starts, before the wait.
	 */
	slowHost?: { ms: number };
	/**
	 * matching `pveam download` / `pct push` invocations exit 0 although their work failed (the
	 * template never lands; the pushed file is cut short), as the real tools do when their task fails;
	 * a matching `pct start` exits 0 and the CT stays stopped (its init exits at once)
	 */
	quiet?: { tool: 'pveam' | 'pct'; match?: string };
}

export interface SlowFault {
	tool: ToolName;
	/** only when the space-joined argv contains this substring */
	match?: string;
	ms: number;
}
export type FaultName = keyof Faults;
export type FaultValue = Faults[FaultName];

/** Same derivation as fake/common.mjs hwaddrFor(). */
export function hwaddrFor(vmid: number): string {
	const h = (Math.imul(vmid, 2654435761) >>> 0).toString(16).padStart(8, '0').toUpperCase();
	return `BC:24:11:${h.slice(0, 2)}:${h.slice(2, 4)}:${h.slice(4, 6)}`;
}

export function ctFromSeed(seed: SeedCt, now = Date.now()): CtState {
	const status = seed.status ?? 'stopped';
	const ct: CtState = {
		vmid: seed.vmid,
		hostname: seed.hostname,
		status,
		arch: 'amd64',
		cores: seed.cores ?? 1,
		memory: seed.memory ?? 512,
		swap: seed.swap ?? 512,
		ostype: seed.ostype ?? 'debian',
		rootfs:
			seed.storage === 'local'
				? `local:${seed.vmid}/vm-${seed.vmid}-disk-0.raw,size=${seed.diskGb ?? 8}G`
				: `local-lvm:vm-${seed.vmid}-disk-0,size=${seed.diskGb ?? 8}G`,
		unprivileged: seed.unprivileged ?? 1,
		net0: seed.net0 ?? `name=eth0,bridge=vmbr0,hwaddr=${hwaddrFor(seed.vmid)},ip=dhcp,type=veth`
	};
	if (seed.features) ct.features = seed.features;
	if (seed.lock) ct.lock = seed.lock;
	if (status === 'running') ct.startedAt = now - 3_600_000;
	return ct;
}

async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
	const tmp = `${path}.${process.pid}.tmp`;
	await writeFile(tmp, JSON.stringify(value, null, 2) + '\n');
	await rename(tmp, path);
}

export async function writeSeed(stateDir: string, seeds: readonly SeedCt[]): Promise<void> {
	await mkdir(join(stateDir, 'cts'), { recursive: true });
	for (const seed of seeds) {
		await mkdir(join(stateDir, 'guests', String(seed.vmid), 'rootfs'), { recursive: true });
		await writeJsonAtomic(join(stateDir, 'cts', `${seed.vmid}.json`), ctFromSeed(seed));
	}
}

export async function writeVms(stateDir: string, vms: readonly SeedVm[]): Promise<void> {
	await mkdir(join(stateDir, 'vms'), { recursive: true });
	for (const v of vms) {
		const status = v.status ?? 'stopped';
		const vm: VmState = { cores: 2, memory: 2048, diskGb: 32, ...v, status, ...(status === 'running' ? { startedAt: Date.now() - 3_600_000 } : {}) };
		await writeJsonAtomic(join(stateDir, 'vms', `${v.vmid}.json`), vm);
	}
}

export async function readVms(stateDir: string): Promise<VmState[]> {
	const dir = join(stateDir, 'vms');
	const files = (await readdir(dir).catch(() => [])).filter((f) => /^\d+\.json$/.test(f));
	const vms = await Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, f), 'utf8')) as VmState));
	return vms.sort((a, b) => a.vmid - b.vmid);
}

/** Changes a VM's stored state behind Nomos's back (a lock, a silent agent); `undefined` removes a key. */
export async function patchVmIn(stateDir: string, vmid: number, patch: Partial<VmState>): Promise<void> {
	const path = join(stateDir, 'vms', `${vmid}.json`);
	const vm = { ...(JSON.parse(await readFile(path, 'utf8')) as VmState), ...patch };
	for (const k of Object.keys(patch) as (keyof VmState)[]) if (patch[k] === undefined) delete vm[k];
	await writeJsonAtomic(path, vm);
}

/** Changes a container's stored state behind Nomos's back (a lock, a status); `undefined` removes a key. */
export async function patchCtIn(stateDir: string, vmid: number, patch: Partial<CtState>): Promise<void> {
	const path = join(stateDir, 'cts', `${vmid}.json`);
	const ct = { ...(JSON.parse(await readFile(path, 'utf8')) as CtState), ...patch };
	for (const k of Object.keys(patch) as (keyof CtState)[]) if (patch[k] === undefined) delete ct[k];
	await writeJsonAtomic(path, ct);
}

export async function setHttpIn(stateDir: string, vmid: number, port: number, site: HttpSite | null): Promise<void> {
	const path = join(stateDir, 'guests', String(vmid), 'http.json');
	await mkdir(join(stateDir, 'guests', String(vmid)), { recursive: true });
	const current = JSON.parse(await readFile(path, 'utf8').catch(() => '{}')) as Record<string, HttpSite>;
	if (site) current[String(port)] = site;
	else delete current[String(port)];
	await writeJsonAtomic(path, current);
}

/** The bytes of a file inside a CT's rootfs (what `pct push` wrote), or null. */
export async function readGuestFile(stateDir: string, vmid: number, path: string): Promise<Buffer | null> {
	return readFile(join(stateDir, 'guests', String(vmid), 'rootfs', path)).catch(() => null);
}

export async function readContainers(stateDir: string): Promise<CtState[]> {
	const dir = join(stateDir, 'cts');
	const files = (await readdir(dir).catch(() => [])).filter((f) => /^\d+\.json$/.test(f));
	const cts = await Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, f), 'utf8')) as CtState));
	return cts.sort((a, b) => a.vmid - b.vmid);
}

async function readLines(path: string): Promise<string[]> {
	const text = await readFile(path, 'utf8').catch((e: NodeJS.ErrnoException) => {
		if (e.code === 'ENOENT') return '';
		throw e;
	});
	return text.split('\n').filter((l) => l.length > 0);
}

export async function readArgvLog(stateDir: string): Promise<string[][]> {
	return (await readLines(join(stateDir, 'argv.log'))).map((l) => JSON.parse(l) as string[]);
}

export async function readHangs(stateDir: string): Promise<{ pid: number; tool: string }[]> {
	return (await readLines(join(stateDir, 'hangs.log'))).map((l) => JSON.parse(l) as { pid: number; tool: string });
}

/** A forked task (`create: { slow }`): the pct process, its worker, and whether the worker finished. */
export interface TaskRecord {
	pid: number;
	worker: number;
	tool: string;
	argv: string[];
	done: boolean;
}

export async function readTasks(stateDir: string): Promise<TaskRecord[]> {
	const lines = (await readLines(join(stateDir, 'tasks.log'))).map((l) => JSON.parse(l) as Partial<TaskRecord> & { worker: number });
	const finished = new Set(lines.filter((l) => l.done).map((l) => l.worker));
	return lines.filter((l) => !l.done).map((l) => ({ pid: l.pid!, worker: l.worker, tool: l.tool!, argv: l.argv!, done: finished.has(l.worker) }));
}

/**
 * Whether a process still runs: it has a /proc entry that is not a zombie. (A killed orphan may
 * stay a zombie when pid 1 does not reap, and signal 0 still reaches a zombie.)
 */
export async function processRunning(pid: number): Promise<boolean> {
	const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
	return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

export async function setFaultIn<K extends FaultName>(stateDir: string, name: K, value: Faults[K] | null): Promise<void> {
	const path = join(stateDir, 'faults.json');
	const current = JSON.parse(await readFile(path, 'utf8').catch(() => '{}')) as Faults;
	if (value === null) delete current[name];
	else current[name] = value;
	await writeJsonAtomic(path, current);
}

/** A node's memory (GiB, default 32) and storages (default local, local-lvm; `ceph` adds a shared rbd pool), read by fake/model.mjs. */
export async function setNodeIn(stateDir: string, knobs: { maxmemGb?: number; storages?: string[] }): Promise<void> {
	await mkdir(stateDir, { recursive: true });
	await writeJsonAtomic(join(stateDir, 'node.json'), knobs);
}
