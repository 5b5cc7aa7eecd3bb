import type { Socket } from 'node:net';
import type { Client } from 'ssh2';
import { connect, type SshTarget } from './client';

/** Channels open at once on one connection: below sshd's MaxSessions (default 10). */
export const MAX_CHANNELS = 8;
/** An unused connection is closed after this long (an operator may read a card for minutes before approving). */
const IDLE_MS = 300_000;

type Entry = {
	/** What the connection was opened and verified for: a changed address, key or pinned fingerprint needs a new one. */
	key: string;
	client: Promise<Client>;
	leases: number;
	dead: boolean;
	idle?: NodeJS.Timeout;
};

const g = globalThis as unknown as { __nomosSshPool?: Map<string, Entry> };
const pool = (g.__nomosSshPool ??= new Map<string, Entry>());
/** Channel slots per pooled connection (see `channel`). */
const slots = new WeakMap<Client, Semaphore>();

const keyOf = (h: SshTarget) => JSON.stringify([h.address, h.port, h.username, h.keyPath, h.hostKeyFingerprint]);

/** The TCP socket under an ssh2 client, to let an idle pooled connection not hold the process open. */
const socketOf = (c: Client) => (c as unknown as { _sock?: Socket })._sock;

function retire(name: string, e: Entry): void {
	e.dead = true;
	if (pool.get(name) === e) pool.delete(name);
	clearTimeout(e.idle);
	if (e.leases === 0) void e.client.then((c) => c.end(), () => undefined);
}

/**
 * An authenticated connection to `host` for a while: one per host and process, opened on first
 * use (the host key checked against the pin, as every new connection is), kept open between
 * uses and shared, so an approved command starts without a new handshake. A connection that
 * closed or errored is dropped and the next lease connects anew; a change of the host's
 * settings or pinned fingerprint retires the old one. Commands on it take a channel slot each
 * (at most MAX_CHANNELS at once; more wait). Call `release` when done (not `end`); `release(true)`
 * when the connection may be broken (a dropped or hung command): it is not used again.
 */
export async function lease(host: SshTarget, timeoutMs?: number): Promise<{ client: Client; release: (discard?: boolean) => void }> {
	let e = pool.get(host.name);
	if (e && (e.dead || e.key !== keyOf(host))) {
		retire(host.name, e);
		e = undefined;
	}
	if (!e) {
		const entry: Entry = { key: keyOf(host), leases: 0, dead: false, client: connect(host, timeoutMs, { keepaliveInterval: 10_000, keepaliveCountMax: 3 }) };
		e = entry;
		pool.set(host.name, entry);
		entry.client.then(
			(c) => {
				slots.set(c, new Semaphore(MAX_CHANNELS));
				c.on('close', () => retire(host.name, entry));
				c.on('error', () => retire(host.name, entry));
			},
			() => retire(host.name, entry)
		);
	}
	const entry = e;
	entry.leases++;
	clearTimeout(entry.idle);
	let client: Client;
	try {
		client = await entry.client;
	} catch (err) {
		entry.leases--;
		throw err;
	}
	socketOf(client)?.ref();
	let released = false;
	return {
		client,
		release: (discard = false) => {
			if (released) return;
			released = true;
			entry.leases--;
			if (discard) retire(host.name, entry);
			if (entry.leases > 0) return;
			if (entry.dead) return void client.end();
			socketOf(client)?.unref();
			entry.idle = setTimeout(() => retire(host.name, entry), IDLE_MS);
			entry.idle.unref();
		}
	};
}

/** Runs `fn` with a pooled connection to `host` (see `lease`). */
export async function withHost<T>(host: SshTarget, fn: (client: Client) => Promise<T>, timeoutMs?: number): Promise<T> {
	const { client, release } = await lease(host, timeoutMs);
	try {
		return await fn(client);
	} finally {
		release();
	}
}

/** Waits for a free channel on a pooled connection; returns its release (a no-op for connections outside the pool). */
export async function channel(client: Client): Promise<() => void> {
	const s = slots.get(client);
	return s ? s.acquire() : () => undefined;
}

/** Closes every pooled connection (process shutdown). */
export function closeAll(): void {
	for (const [name, e] of pool) {
		e.leases = 0;
		retire(name, e);
	}
}

/** How many connections are pooled (for tests and benches). */
export function pooledCount(): number {
	return pool.size;
}

class Semaphore {
	#free: number;
	#waiting: Array<() => void> = [];
	constructor(n: number) {
		this.#free = n;
	}
	async acquire(): Promise<() => void> {
		if (this.#free > 0) this.#free--;
		else await new Promise<void>((r) => this.#waiting.push(r));
		let done = false;
		return () => {
			if (done) return;
			done = true;
			const next = this.#waiting.shift();
			if (next) next();
			else this.#free++;
		};
	}
}
