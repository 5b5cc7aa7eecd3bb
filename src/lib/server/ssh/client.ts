import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { Client, type ClientChannel, type ConnectConfig } from 'ssh2';
import { groupedArgv, groupFromMarker, stopGroupArgv, toCommand, type RemoteGroup } from './quote';
import { channel } from './channels';
import { logger } from '../log';
import type { Host } from '../db/queries/hosts';

const log = logger('ssh');

/** What a connection needs of a host: its row's address, account, key and pinned fingerprint. */
export type SshTarget = Pick<Host, 'name' | 'address' | 'port' | 'username' | 'keyPath' | 'hostKeyFingerprint'>;

/** `SHA256:<base64, no padding>`, the form `ssh-keygen -lf` prints. */
export function fingerprintOf(key: Buffer): string {
	return 'SHA256:' + createHash('sha256').update(key).digest('base64').replace(/=+$/, '');
}

export class HostKeyError extends Error {
	constructor(
		readonly host: string,
		readonly expected: string | null,
		readonly presented: string
	) {
		super(
			expected
				? `host key of ${host} does not match the pinned fingerprint (expected ${expected}, got ${presented}); refusing to connect`
				: `host key of ${host} is not pinned yet (it presented ${presented}); confirm it in Settings → Hosts`
		);
	}
}

/**
 * An SSH failure. `message` is safe to show the model and the operator; `localDetail` may name
 * local files (the key path) and is shown only to admins in Settings and in the server log.
 */
export class SshError extends Error {
	constructor(
		message: string,
		readonly localDetail: string | null = null
	) {
		super(message);
	}
}

/**
 * Opens an authenticated connection. The host key is checked against the pinned fingerprint
 * during the handshake, before any authentication; a mismatch or a missing pin aborts.
 */
export async function connect(
	host: SshTarget,
	timeoutMs = 10_000,
	extra: Pick<ConnectConfig, 'keepaliveInterval' | 'keepaliveCountMax'> = {}
): Promise<Client> {
	let privateKey: Buffer;
	try {
		privateKey = await readFile(host.keyPath);
	} catch (e) {
		const code = (e as NodeJS.ErrnoException).code;
		const why = code === 'ENOENT' ? 'it does not exist' : code === 'EACCES' ? 'permission denied' : 'unreadable';
		const detail = `cannot read SSH key ${host.keyPath} for ${host.name}: ${(e as Error).message}`;
		log.error({ host: host.name, keyPath: host.keyPath, code }, `cannot read SSH key ${host.keyPath} for ${host.name}: ${(e as Error).message}`);
		throw new SshError(`cannot read the SSH private key configured for ${host.name} (${why}); an admin can fix it in Settings`, detail);
	}
	let presented: string | null = null;
	const client = new Client();
	const config: ConnectConfig = {
		host: host.address,
		port: host.port,
		username: host.username,
		privateKey,
		readyTimeout: timeoutMs,
		...extra,
		hostVerifier: (key: Buffer) => {
			presented = fingerprintOf(key);
			return host.hostKeyFingerprint !== null && presented === host.hostKeyFingerprint;
		}
	};
	return new Promise((resolve, reject) => {
		client.once('ready', () => {
			// Later errors surface through the exec callbacks and 'close'; never as an unhandled event.
			client.on('error', () => undefined);
			resolve(client);
		});
		client.once('error', (err: Error & { level?: string }) => {
			client.end();
			if (presented && presented !== host.hostKeyFingerprint) {
				reject(new HostKeyError(host.name, host.hostKeyFingerprint, presented));
			} else reject(new SshError(`SSH to ${host.name} (${host.address}:${host.port}) failed: ${err.message}`));
		});
		// A host that hangs up after the banners (sshd's MaxStartups, a firewall) makes ssh2 emit
		// only 'close': without this the connect would never settle. (After 'error' it is a no-op.)
		client.once('close', () =>
			reject(new SshError(`SSH to ${host.name} (${host.address}:${host.port}) failed: the host closed the connection before authentication`))
		);
		client.connect(config);
	});
}

/** Reads the host key a server presents, without authenticating (for pinning in settings). */
export function readHostKey(address: string, port: number, timeoutMs = 10_000): Promise<string> {
	return new Promise((resolve, reject) => {
		let seen: string | null = null;
		const client = new Client();
		const done = () => {
			client.end();
			if (seen) resolve(seen);
			else reject(new SshError(`no SSH server answered at ${address}:${port}`));
		};
		client.once('error', (err) => {
			if (seen) done();
			else {
				client.end();
				reject(new SshError(`SSH to ${address}:${port} failed: ${err.message}`));
			}
		});
		client.connect({
			host: address,
			port,
			username: 'nomos-probe',
			readyTimeout: timeoutMs,
			hostVerifier: (key: Buffer) => {
				seen = fingerprintOf(key);
				return false;
			}
		});
	});
}

export type { RemoteGroup };

/**
 * How stopping a command's process group on the host ended: it had ended already (`gone`), it
 * was running and is gone now (`stopped`), it is still there after KILL (`running`), or the host
 * did not confirm (`unreachable`: no answer, or the group was never reported).
 */
export type StopOutcome = 'gone' | 'stopped' | 'running' | 'unreachable';

/** Whether nothing of the command runs on the host any more. */
export const isGone = (o: StopOutcome | null | undefined): boolean => o === 'gone' || o === 'stopped';

export interface ExecResult {
	exitCode: number | null;
	signal: string | null;
	stdout: string;
	stderr: string;
	durationMs: number;
	timedOut: boolean;
	aborted: boolean;
	/** A grouped command's process group on the host, once reported. */
	group: RemoteGroup | null;
	/** After a timeout or abort of a grouped command: how stopping its group ended. */
	stopped: StopOutcome | null;
}

export interface ExecOptions {
	timeoutMs?: number;
	signal?: AbortSignal;
	onStdout?: (chunk: string) => void;
	onStderr?: (chunk: string) => void;
	/** Keep at most this many characters of each stream (the tail). */
	maxOutput?: number;
	/** Written to the command's standard input over the channel, then EOF (data never on the command line). */
	stdin?: string | Buffer;
	/**
	 * Run in its own session and process group on the host (`groupedArgv`), so that a timeout or
	 * abort stops all of it there — the children a tool forks included — and waits until it is
	 * gone (`stopGroup`). Without it only the top process is signalled, which is all sshd passes
	 * on; a closed channel stops nothing.
	 */
	group?: boolean;
	/** Called with the group as soon as the host reports it (implies `group`). */
	onGroup?: (g: RemoteGroup) => void;
	/** Give up when the host has not opened the channel within this long (default: `timeoutMs`). */
	openTimeoutMs?: number;
}

/** How long a stopped command may take to confirm before execArgv returns anyway. */
const STOP_GRACE_MS = 1_000;
/** The stop script's own bound (2 s after TERM, 5 s after KILL) and some slack. */
const STOP_TIMEOUT_MS = 10_000;
/** A stop on a connection that no longer answers gives up this soon (the caller may try a new one). */
const STOP_OPEN_TIMEOUT_MS = 3_000;

/**
 * Runs one argv on a connected host. The argv is quoted by `toCommand`, never interpolated.
 * On timeout or abort a grouped command's process group is stopped on the host; any other
 * command's top process is signalled and the channel closed.
 */
export async function execArgv(client: Client, argv: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
	// A pooled connection is shared: wait for one of its channel slots (see ssh/pool.ts).
	const release = await channel(client);
	try {
		return await execOnChannel(client, argv, opts);
	} finally {
		release();
	}
}

/**
 * Stops a grouped command's process group on the host and waits until it is gone (TERM, up to
 * 2 s, KILL, up to 5 s; see `stopGroupArgv`). Only a group whose processes still carry the
 * command's tag is signalled. It runs outside the connection's channel slots, in the headroom
 * MAX_CHANNELS leaves below sshd's MaxSessions, so a busy connection can still stop a command.
 */
export async function stopGroup(client: Client, g: RemoteGroup): Promise<StopOutcome> {
	try {
		const r = await execOnChannel(client, stopGroupArgv(g), { timeoutMs: STOP_TIMEOUT_MS, openTimeoutMs: STOP_OPEN_TIMEOUT_MS });
		return r.exitCode === 0 ? 'gone' : r.exitCode === 2 ? 'stopped' : r.exitCode === 3 ? 'running' : 'unreachable';
	} catch {
		return 'unreachable';
	}
}

function execOnChannel(client: Client, argv: readonly string[], opts: ExecOptions): Promise<ExecResult> {
	const tag = opts.group || opts.onGroup ? randomBytes(8).toString('hex') : null;
	const command = toCommand(tag ? groupedArgv(argv, tag) : argv);
	const max = opts.maxOutput ?? 64_000;
	const started = Date.now();
	return new Promise((resolve, reject) => {
		if (opts.signal?.aborted) {
			resolve({
				exitCode: null,
				signal: null,
				stdout: '',
				stderr: '',
				durationMs: 0,
				timedOut: false,
				aborted: true,
				group: null,
				stopped: tag ? 'gone' : null
			});
			return;
		}
		let stream: ClientChannel | undefined;
		let stdout = '';
		let stderr = '';
		let exitCode: number | null = null;
		let signal: string | null = null;
		let timedOut = false;
		let aborted = false;
		let settled = false;
		let group: RemoteGroup | null = null;
		let stopped: StopOutcome | null = null;
		let halting: Promise<void> | undefined;
		let graceTimer: NodeJS.Timeout | undefined;
		const groupWaiters: Array<() => void> = [];
		const wakeGroupWaiters = () => groupWaiters.splice(0).forEach((w) => w());
		// SSH splits output into packets anywhere, also inside a multi-byte UTF-8 character:
		// decode each stream statefully so a character split across two chunks stays intact.
		const outDecoder = new StringDecoder('utf8');
		const errDecoder = new StringDecoder('utf8');
		const onOut = (s: string) => {
			if (!s) return;
			stdout = (stdout + s).slice(-max);
			opts.onStdout?.(s);
		};
		const onErr = (s: string) => {
			if (!s) return;
			stderr = (stderr + s).slice(-max);
			opts.onStderr?.(s);
		};
		// A grouped command's first stdout line is the marker: held back until complete, never output.
		let head: string | null = tag ? '' : null;
		const onStdoutText = (s: string) => {
			if (head === null) return onOut(s);
			head += s;
			const nl = head.indexOf('\n');
			if (nl < 0 && head.length < 100) return;
			const line = nl < 0 ? head : head.slice(0, nl);
			const rest = nl < 0 ? '' : head.slice(nl + 1);
			head = null;
			const pgid = groupFromMarker(line);
			if (pgid !== null && tag) {
				group = { pgid, tag };
				opts.onGroup?.(group);
				wakeGroupWaiters();
			} else onOut(nl < 0 ? line : line + '\n');
			onOut(rest);
		};
		const finish = () => {
			if (settled) return;
			settled = true;
			onStdoutText(outDecoder.end());
			if (head) onOut(head);
			onErr(errDecoder.end());
			clearTimeout(timer);
			clearTimeout(graceTimer);
			wakeGroupWaiters();
			opts.signal?.removeEventListener('abort', onAbort);
			resolve({ exitCode, signal, stdout, stderr, durationMs: Date.now() - started, timedOut, aborted, group, stopped });
		};
		const groupWithin = (ms: number) =>
			new Promise<RemoteGroup | null>((res) => {
				if (group || settled) return res(group);
				const t = setTimeout(() => res(group), ms);
				groupWaiters.push(() => (clearTimeout(t), res(group)));
			});
		/** Stops what runs on `ch`: its process group on the host when grouped, else its top process. */
		const halt = async (ch: ClientChannel) => {
			if (tag) {
				const g = await groupWithin(STOP_GRACE_MS);
				stopped = g ? await stopGroup(client, g) : 'unreachable';
			} else {
				try {
					ch.signal('KILL');
				} catch {
					/* channel may be closed already */
				}
			}
			ch.close();
		};
		// A host that does not confirm the close (a hung command, a dead link) still lets go of us
		// within STOP_GRACE_MS of the stop.
		const stop = () => {
			if (settled || halting) return;
			if (!stream) {
				// The channel never opened: a late one is stopped on arrival (see below).
				if (tag) stopped = 'unreachable';
				return finish();
			}
			halting = halt(stream).then(() => {
				graceTimer = setTimeout(finish, STOP_GRACE_MS);
			});
		};
		const openTimeout = opts.openTimeoutMs ?? opts.timeoutMs;
		let timer = openTimeout ? setTimeout(() => ((timedOut = true), stop()), openTimeout) : undefined;
		const onAbort = () => ((aborted = true), stop());
		opts.signal?.addEventListener('abort', onAbort, { once: true });
		client.exec(command, (err, ch) => {
			if (settled) {
				if (!err) void halt(ch);
				return;
			}
			if (err) {
				clearTimeout(timer);
				opts.signal?.removeEventListener('abort', onAbort);
				settled = true;
				return reject(new SshError(`exec failed: ${err.message}`));
			}
			stream = ch;
			if (opts.openTimeoutMs !== undefined && opts.timeoutMs !== opts.openTimeoutMs) {
				clearTimeout(timer);
				if (opts.timeoutMs) timer = setTimeout(() => ((timedOut = true), stop()), Math.max(0, opts.timeoutMs - (Date.now() - started)));
			}
			ch.on('data', (d: Buffer) => onStdoutText(outDecoder.write(d)));
			ch.stderr.on('data', (d: Buffer) => onErr(errDecoder.write(d)));
			ch.on('exit', (code: number | null, sig?: string) => {
				exitCode = code ?? null;
				signal = sig ?? null;
			});
			ch.on('close', () => void (halting ? halting.then(finish) : finish()));
			if (opts.stdin !== undefined) ch.end(opts.stdin);
		});
	});
}

/** Connects (a fresh connection, outside the pool), runs one argv, disconnects: for checks of a host's settings. */
export async function runOnHost(host: SshTarget, argv: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
	const client = await connect(host);
	try {
		return await execArgv(client, argv, opts);
	} finally {
		client.end();
	}
}
