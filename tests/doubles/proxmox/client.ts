// Minimal ssh2 client helpers for talking to the Proxmox double (or any SSH target) in tests.
import { readFile } from 'node:fs/promises';
import ssh2, { type Client, type ClientChannel, type ConnectConfig } from 'ssh2';
import { fingerprintOf } from './keys';

export interface SshTarget {
	host: string;
	port: number;
	user: string;
	clientKeyPath: string;
	hostKeyFingerprint: string;
}

export interface ExecResult {
	stdout: string;
	stderr: string;
	/** exit status, or null when the remote process died from a signal */
	code: number | null;
	signal?: string;
}

/** POSIX single-quote a value for a remote shell: `'` → `'\''`. */
export const shQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Connect with the target's client key, pinning its host key by SHA256 fingerprint. */
export async function connectTo(target: SshTarget, overrides: Partial<ConnectConfig> = {}): Promise<Client> {
	const privateKey = await readFile(target.clientKeyPath);
	const conn = new ssh2.Client();
	return new Promise((resolve, reject) => {
		conn.once('ready', () => resolve(conn));
		conn.once('error', reject);
		// ssh2 reports a close after the banners but before authentication with no error at all.
		conn.once('close', () => reject(new Error('connection closed before authentication')));
		conn.connect({
			host: target.host,
			port: target.port,
			username: target.user,
			privateKey,
			hostVerifier: (key: Buffer) => fingerprintOf(key) === target.hostKeyFingerprint,
			readyTimeout: 10_000,
			...overrides
		});
	});
}

export function openExec(conn: Client, command: string): Promise<ClientChannel> {
	return new Promise((resolve, reject) => {
		conn.exec(command, (err, channel) => (err ? reject(err) : resolve(channel)));
	});
}

/** Collect a channel's output until it closes. */
export function collect(channel: ClientChannel): Promise<ExecResult> {
	const out: Buffer[] = [];
	const err: Buffer[] = [];
	let code: number | null = null;
	let signal: string | undefined;
	channel.on('data', (d: Buffer) => out.push(d));
	channel.stderr.on('data', (d: Buffer) => err.push(d));
	channel.on('exit', (c: number | null, s?: string) => {
		code = c;
		signal = s;
	});
	return new Promise((resolve) => {
		channel.on('close', () => {
			resolve({ stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), code, signal });
		});
	});
}

export async function execOn(conn: Client, command: string): Promise<ExecResult> {
	return collect(await openExec(conn, command));
}
