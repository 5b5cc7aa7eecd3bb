// Proxmox VE node test double (several form a cluster: cluster.ts): a real SSH server on 127.0.0.1 whose exec requests run through
// `bash -c` with fake pct/pvesh/pvesm/systemctl/apt-get/pveam/qm/vzdump (and sha256sum/curl as
// a CT sees them) first on PATH (see bin/ and fake/). Like sshd, it stops nothing a client
// leaves behind: only `close()` kills what still runs.
import { timingSafeEqual } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo, Socket } from 'node:net';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ssh2, { type AuthContext, type Connection, type ParsedKey } from 'ssh2';
import { parseAuthorizedKeys, type AuthorizedKey } from './authorized-keys';
import { killEverythingOf, runOverChannel, type RunningCommand } from './exec';
import { addJournalIn, addTaskIn, fillIn, readHealth, serviceIn, setHealthIn, setServiceIn, type HealthState, type SeedTask } from './health';
import { fingerprintOfPrivateKey, generateKeyPair } from './keys';
import {
	patchCtIn,
	patchVmIn,
	readArgvLog,
	readContainers,
	readGuestFile,
	readHangs,
	readTasks,
	readVms,
	setFaultIn,
	setHttpIn,
	writeSeed,
	writeVms,
	type CtState,
	type FaultName,
	type Faults,
	type HttpSite,
	type SeedCt,
	type SeedVm,
	type TaskRecord,
	type VmImage,
	type VmState
} from './state';

export { generateHostKey, generateKeyPair, fingerprintOf, type KeyPair } from './keys';
export type { CtState, FailFault, FaultName, FaultValue, Faults, HttpSite, SeedCt, SeedVm, TaskRecord, ToolName, VmImage, VmState } from './state';
export { processRunning } from './state';
export type { AptPackage, BackupJob, BackupVolume, Disk, HealthState, PveTask, SeedTask, StorageKnobs, ZPool } from './health';

const { Server, utils } = ssh2;
const BIN_DIR = fileURLToPath(new URL('./bin', import.meta.url));

export interface ProxmoxDoubleOptions {
	/** default 0 = pick a free port */
	port?: number;
	/** default 'strong' */
	nodeName?: string;
	/** default: a fresh temp dir (removed on close); a given dir is kept */
	stateDir?: string;
	seed?: SeedCt[];
	/** minimal QEMU VMs for `qm` */
	vms?: SeedVm[];
	/** reuse this OpenSSH private host key instead of generating one */
	hostKeyPath?: string;
	/** delay between streamed progress lines (PVE_DOUBLE_DELAY_MS), default 50 */
	delayMs?: number;
	/** volids `pct create` accepts; default debian-12, ubuntu-24.04, alpine-3.20 on local:vztmpl */
	templates?: string[];
	/** cloud images `qm create … import-from=` accepts; default fake/model.mjs DEFAULT_VM_IMAGES */
	images?: VmImage[];
	/** the folder of a cluster's shared state (cluster.json): set by startProxmoxCluster (cluster.ts) */
	clusterDir?: string;
	/**
	 * More keys the double accepts for root, as authorized_keys lines: a key with a
	 * `command="…"` option runs that command (through bash -c, as sshd runs it through the
	 * user's shell) for every exec instead of the client's, which it finds in
	 * SSH_ORIGINAL_COMMAND. The double's own client key keeps its full shell.
	 */
	authorizedKeys?: string;
}

export interface ProxmoxDouble {
	host: '127.0.0.1';
	port: number;
	nodeName: string;
	user: 'root';
	/** OpenSSH-format ed25519 private key (no passphrase) the client must authenticate with */
	clientKeyPath: string;
	/** `SHA256:<base64 without padding>` as `ssh-keygen -lf` prints it */
	hostKeyFingerprint: string;
	stateDir: string;
	/** argv of every fake-binary invocation (argv[0] = tool name), in order */
	argvLog(): Promise<string[][]>;
	/** raw command strings received over SSH, in order */
	execLog(): string[];
	/** the same commands with when each arrived and ended (epoch ms; `endedAt` null while running) and the key's forced command */
	execTimes(): ExecTime[];
	setFault<K extends FaultName>(name: K, value: Faults[K] | null): Promise<void>;
	containers(): Promise<CtState[]>;
	vms(): Promise<VmState[]>;
	/** changes a CT's state behind Nomos's back (e.g. `{ lock: 'snapshot' }`; `undefined` removes a key) */
	patchCt(vmid: number, patch: Partial<CtState>): Promise<void>;
	/** changes a VM's state behind Nomos's back (e.g. `{ lock: 'backup' }`, `{ agentDown: true }`) */
	patchVm(vmid: number, patch: Partial<VmState>): Promise<void>;
	/** what `curl http://127.0.0.1:<port>` inside the CT answers, or the host's curl from VM <vmid> at its agent's address (null: nothing listens) */
	setHttp(vmid: number, port: number, site: HttpSite | null): Promise<void>;
	/** a file inside a CT as pct push left it */
	guestFile(vmid: number, path: string): Promise<Buffer | null>;
	/** pids of fake invocations that hung (fault or `create: 'hang'`) — to assert they were killed */
	hangs(): Promise<{ pid: number; tool: string }[]>;
	/** tasks forked by `create: { slow }`: the pct pid, its worker's pid, and whether the worker finished */
	tasks(): Promise<TaskRecord[]>;
	/** the node's health state (health.json): storage knobs, backups, jobs, tasks, apt, zpools, disks */
	health(): Promise<HealthState>;
	/** replaces the given parts of the health state (null: back to the default) */
	setHealth(patch: { [K in keyof HealthState]?: HealthState[K] | null }): Promise<void>;
	/** the storage is `fraction` (0–1) full now, its backups included (a later deleted backup frees its space); `total` in bytes */
	fill(storage: string, fraction: number, total?: number): Promise<void>;
	/** adds a task on this node (ended `OK` unless `status` says its error, or `running`) and returns its UPID */
	addTask(task: SeedTask & { running?: boolean }): Promise<string>;
	/** a host service's state as systemctl and `/nodes/<n>/services` see it (`pveproxy`, `ssh`…); with `vmid`, a unit inside that CT */
	setService(name: string, state: { active: boolean; enabled?: boolean }, vmid?: number): Promise<void>;
	/** a unit's state on the host or (`vmid`) in a CT, as systemctl keeps it; null: no such unit there */
	service(name: string, vmid?: number): Promise<{ active: boolean; enabled: boolean } | null>;
	/** appends lines to a unit's journal on the host or (`vmid`) in a CT: what `journalctl -u <unit>` prints */
	addJournal(unit: string, lines: string[], vmid?: number): Promise<void>;
	/** authenticated connections so far (each one a full handshake) */
	handshakes(): number;
	/** the most sessions (channels) one connection had open at once */
	maxOpenSessions(): number;
	/** closes every client connection, as a restarted sshd or a dropped link would */
	dropConnections(): void;
	/**
	 * false: the host stops answering, as behind a broken link: open connections get no more
	 * replies (and send nothing), new ones are cut at once. true: those connections are dropped
	 * (a healed link finds them dead) and new ones are served again. Commands run on throughout.
	 */
	setReachable(reachable: boolean): void;
	/**
	 * true: the host is down with its address up (sshd stopped, a powered-off member behind a
	 * router that answers): nothing listens on the port, so every connection is refused
	 * (ECONNREFUSED) and open ones are closed. false: it listens again on the same port.
	 */
	setRefusing(refusing: boolean): Promise<void>;
	close(): Promise<void>;
}

export interface ExecTime {
	command: string;
	at: number;
	endedAt: number | null;
	/** the forced command of the key it came through (`command="…"` in authorizedKeys); null: a key with a full shell */
	forced: string | null;
}

/** Sessions one connection may have open at once, as OpenSSH's MaxSessions default. */
const MAX_SESSIONS = 10;

function sameBytes(a: Buffer, b: Buffer): boolean {
	return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Publickey only, user root, only the `allowed` keys; signatures really verified. Everything
 * else is rejected. Returns the key that signed in (null for a probe or a rejection).
 */
function authenticate(ctx: AuthContext, allowed: AuthorizedKey[]): AuthorizedKey | null {
	if (ctx.method !== 'publickey' || ctx.username !== 'root') return (ctx.reject(['publickey']), null);
	const ctxKey = ctx.key;
	const k = allowed.find((a) => ctxKey.algo === a.key.type && sameBytes(ctxKey.data, a.key.getPublicSSH()));
	if (!k) return (ctx.reject(['publickey']), null);
	if (!ctx.signature || !ctx.blob) return (ctx.accept(), null); // key probe -> PK_OK, client then signs
	if (k.key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) return (ctx.reject(['publickey']), null);
	ctx.accept();
	return k;
}

function parsePublicKey(data: Buffer): ParsedKey {
	const parsed = utils.parseKey(data);
	const key = Array.isArray(parsed) ? parsed[0] : parsed;
	if (!key || key instanceof Error) throw new Error(`cannot parse client public key: ${String(key)}`);
	return key;
}

/** The double's calls that only read or write its state dir (what its fake tools read): all a process that did not start it can use. */
export type NodeState = Pick<
	ProxmoxDouble,
	| 'setFault'
	| 'containers'
	| 'vms'
	| 'patchCt'
	| 'patchVm'
	| 'setHttp'
	| 'guestFile'
	| 'hangs'
	| 'tasks'
	| 'health'
	| 'setHealth'
	| 'fill'
	| 'addTask'
	| 'setService'
	| 'service'
	| 'addJournal'
>;

/** Those calls on a running double's state dir, e.g. from a Playwright spec (the e2e global setup started the double). */
export function nodeStateIn(stateDir: string, nodeName: string): NodeState {
	return {
		setFault: (name, value) => setFaultIn(stateDir, name, value),
		containers: () => readContainers(stateDir),
		vms: () => readVms(stateDir),
		patchCt: (vmid, patch) => patchCtIn(stateDir, vmid, patch),
		patchVm: (vmid, patch) => patchVmIn(stateDir, vmid, patch),
		setHttp: (vmid, port, site) => setHttpIn(stateDir, vmid, port, site),
		guestFile: (vmid, path) => readGuestFile(stateDir, vmid, path),
		hangs: () => readHangs(stateDir),
		tasks: () => readTasks(stateDir),
		health: () => readHealth(stateDir),
		setHealth: (patch) => setHealthIn(stateDir, patch),
		fill: (storage, fraction, total) => fillIn(stateDir, storage, fraction, total),
		addTask: (task) => addTaskIn(stateDir, nodeName, task),
		setService: (name, state, vmid) => setServiceIn(stateDir, name, state, vmid),
		service: (name, vmid) => serviceIn(stateDir, name, vmid),
		addJournal: (unit, lines, vmid) => addJournalIn(stateDir, unit, lines, vmid)
	};
}

export async function startProxmoxDouble(opts: ProxmoxDoubleOptions = {}): Promise<ProxmoxDouble> {
	const nodeName = opts.nodeName ?? 'strong';
	const keyDir = await mkdtemp(join(tmpdir(), 'pve-double-keys-'));
	const stateDir = opts.stateDir ?? (await mkdtemp(join(tmpdir(), 'pve-double-state-')));
	await mkdir(stateDir, { recursive: true });
	if (opts.seed) await writeSeed(stateDir, opts.seed);
	if (opts.vms) await writeVms(stateDir, opts.vms);
	if (opts.templates) await writeFile(join(stateDir, 'templates.json'), JSON.stringify(opts.templates));
	if (opts.images) await writeFile(join(stateDir, 'images.json'), JSON.stringify(opts.images));

	const client = await generateKeyPair(keyDir, 'id_ed25519', 'nomos@proxmox-double');
	const hostKeyPath = opts.hostKeyPath ?? (await generateKeyPair(keyDir, 'ssh_host_ed25519_key', `root@${nodeName}`)).privateKeyPath;
	const hostKeyFingerprint = await fingerprintOfPrivateKey(hostKeyPath);
	const allowedKeys: AuthorizedKey[] = [
		{ key: parsePublicKey(await readFile(client.publicKeyPath)), command: null },
		...parseAuthorizedKeys(opts.authorizedKeys ?? '')
	];

	// bash sources ~/.bashrc when stdin is a socket (it assumes sshd), so give it an empty HOME.
	const home = join(stateDir, 'home');
	await mkdir(home, { recursive: true });
	const env: NodeJS.ProcessEnv = {
		PATH: `${BIN_DIR}:${process.env.PATH ?? ''}`,
		HOME: home,
		PVE_DOUBLE_STATE: stateDir,
		PVE_DOUBLE_NODE: nodeName,
		PVE_DOUBLE_DELAY_MS: String(opts.delayMs ?? process.env.PVE_DOUBLE_DELAY_MS ?? 50),
		...(opts.clusterDir ? { PVE_DOUBLE_CLUSTER: opts.clusterDir } : {})
	};
	const execLog: string[] = [];
	const execTimes: ExecTime[] = [];
	const active = new Set<RunningCommand>();
	const connections = new Set<Connection>();
	let handshakes = 0;
	let maxOpen = 0;
	let reachable = true;
	const frozen = new Set<Socket>();
	const socketOf = (conn: Connection) => (conn as unknown as { _sock: Socket })._sock;
	const freeze = (conn: Connection) => {
		const sock = socketOf(conn);
		frozen.add(sock);
		sock.pause();
		sock.write = () => true;
	};

	const onConnection = (conn: Connection): void => {
		if (!reachable) return void socketOf(conn).destroy();
		let open = 0;
		let signedIn: AuthorizedKey | null = null;
		connections.add(conn);
		conn.on('close', () => connections.delete(conn));
		conn.on('error', () => {}); // client resets are expected in tests
		conn.on('authentication', (ctx) => void (signedIn = authenticate(ctx, allowedKeys) ?? signedIn));
		conn.on('ready', () => {
			handshakes++;
			conn.on('session', (acceptSession, rejectSession) => {
				// Like sshd: beyond MaxSessions the channel open fails ("open failed" on the client).
				if (open >= MAX_SESSIONS) return rejectSession();
				open++;
				maxOpen = Math.max(maxOpen, open);
				const session = acceptSession();
				session.once('close', () => open--);
				let running: RunningCommand | undefined;
				session.on('exec', (accept, _reject, info) => {
					// A forced command runs instead of the client's, which it reads from SSH_ORIGINAL_COMMAND.
					const forced = signedIn?.command ?? null;
					const time: ExecTime = { command: info.command, at: Date.now(), endedAt: null, forced };
					execLog.push(info.command);
					execTimes.push(time);
					const cmd =
						forced === null ? runOverChannel(accept(), info.command, env) : runOverChannel(accept(), forced, { ...env, SSH_ORIGINAL_COMMAND: info.command });
					running = cmd;
					active.add(cmd);
					void cmd.done.then(() => {
						time.endedAt = Date.now();
						active.delete(cmd);
					});
				});
				// sshd delivers a signal request to the session's child alone, not to its group.
				session.on('signal', (_accept, _reject, info) => {
					const sig = `SIG${info.name}`;
					if (sig in constants.signals) running?.kill(sig as NodeJS.Signals);
				});
			});
		});
	};

	const server = new Server({ hostKeys: [await readFile(hostKeyPath)] }, onConnection);
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
	});
	const port = (server.address() as AddressInfo).port;
	let refusing = false;

	return {
		host: '127.0.0.1',
		port,
		nodeName,
		user: 'root',
		clientKeyPath: client.privateKeyPath,
		hostKeyFingerprint,
		stateDir,
		argvLog: () => readArgvLog(stateDir),
		execLog: () => [...execLog],
		execTimes: () => execTimes.map((t) => ({ ...t })),
		...nodeStateIn(stateDir, nodeName),
		handshakes: () => handshakes,
		maxOpenSessions: () => maxOpen,
		dropConnections: () => {
			for (const conn of connections) conn.end();
		},
		setReachable(on) {
			reachable = on;
			if (!on) for (const conn of connections) freeze(conn);
			else {
				for (const sock of frozen) sock.destroy();
				frozen.clear();
			}
		},
		async setRefusing(on) {
			if (on === refusing) return;
			refusing = on;
			if (on) {
				for (const conn of connections) conn.end();
				await new Promise<void>((resolve) => server.close(() => resolve()));
			} else
				await new Promise<void>((resolve, reject) => {
					server.once('error', reject);
					server.listen(port, '127.0.0.1', () => (server.off('error', reject), resolve()));
				});
		},
		async close() {
			for (const cmd of active) cmd.killGroup('SIGKILL');
			await killEverythingOf(stateDir);
			for (const sock of frozen) sock.destroy();
			for (const conn of connections) conn.end();
			if (!refusing) await new Promise<void>((resolve) => server.close(() => resolve()));
			await Promise.all([...active].map((cmd) => cmd.done));
			await rm(keyDir, { recursive: true, force: true });
			if (!opts.stateDir) await rm(stateDir, { recursive: true, force: true });
		}
	};
}
