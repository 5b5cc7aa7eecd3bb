import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { Client, type ConnectConfig } from 'ssh2';
import { toCommand } from './quote';
import { channel } from './pool';
import { logger } from '../log';

const log = logger('ssh');

export interface SshTarget {
	name: string;
	address: string;
	port: number;
	username: string;
	keyPath: string;
	hostKeyFingerprint: string | null;
}

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
export async function connect(host: SshTarget, timeoutMs = 10_000, extra: Pick<ConnectConfig, 'keepaliveInterval' | 'keepaliveCountMax'> = {}): Promise<Client> {
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
		client.once('close', () => reject(new SshError(`SSH to ${host.name} (${host.address}:${host.port}) failed: the host closed the connection before authentication`)));
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

export interface ExecResult {
	exitCode: number | null;
	signal: string | null;
	stdout: string;
	stderr: string;
	durationMs: number;
	timedOut: boolean;
	aborted: boolean;
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
}

/** How long a stopped command may take to confirm before execArgv returns anyway. */
const STOP_GRACE_MS = 1_000;

/**
 * Runs one argv on a connected host. The argv is quoted by `toCommand`, never interpolated.
 * On timeout or abort the channel is closed (the remote command is signalled and stopped).
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

function execOnChannel(client: Client, argv: readonly string[], opts: ExecOptions): Promise<ExecResult> {
	const command = toCommand(argv);
	const max = opts.maxOutput ?? 64_000;
	const started = Date.now();
	return new Promise((resolve, reject) => {
		if (opts.signal?.aborted) {
			resolve({ exitCode: null, signal: null, stdout: '', stderr: '', durationMs: 0, timedOut: false, aborted: true });
			return;
		}
		client.exec(command, (err, stream) => {
			if (err) return reject(new SshError(`exec failed: ${err.message}`));
			let stdout = '';
			let stderr = '';
			let exitCode: number | null = null;
			let signal: string | null = null;
			let timedOut = false;
			let aborted = false;
			let settled = false;
			let graceTimer: NodeJS.Timeout | undefined;
			const finish = () => {
				if (settled) return;
				settled = true;
				onOut(outDecoder.end());
				onErr(errDecoder.end());
				clearTimeout(timer);
				clearTimeout(graceTimer);
				opts.signal?.removeEventListener('abort', onAbort);
				resolve({ exitCode, signal, stdout, stderr, durationMs: Date.now() - started, timedOut, aborted });
			};
			// Signal the remote process and close the channel; a host that does not confirm the
			// close (a hung command, a dead link) still lets go of us within STOP_GRACE_MS.
			const stop = () => {
				try {
					stream.signal('KILL');
				} catch {
					/* channel may be closed already */
				}
				stream.close();
				graceTimer ??= setTimeout(finish, STOP_GRACE_MS);
			};
			const timer = opts.timeoutMs ? setTimeout(() => ((timedOut = true), stop()), opts.timeoutMs) : undefined;
			const onAbort = () => ((aborted = true), stop());
			opts.signal?.addEventListener('abort', onAbort, { once: true });
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
			stream.on('data', (d: Buffer) => onOut(outDecoder.write(d)));
			stream.stderr.on('data', (d: Buffer) => onErr(errDecoder.write(d)));
			stream.on('exit', (code: number | null, sig?: string) => {
				exitCode = code ?? null;
				signal = sig ?? null;
			});
			stream.on('close', finish);
			if (opts.stdin !== undefined) stream.end(opts.stdin);
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
