import type { Socket } from 'node:net';
import type { Client } from 'ssh2';
import { limitChannels } from './channels';
import { connect, type SshTarget } from './client';

/** Channels open at once on one connection: below sshd's MaxSessions (default 10). */
export const MAX_CHANNELS = 8;
/**
 * Connections per host and key: a second one opens when every open one already has MAX_CHANNELS users,
 * so a batch of approved executions on one host starts at once instead of queueing for channels
 * (sshd's MaxStartups only limits handshakes in progress).
 */
export const MAX_CONNECTIONS = 2;
/** An unused connection is closed after this long (an operator may read a card for minutes before approving). */
const IDLE_MS = 300_000;

type Entry = {
	/** What the connection was opened and verified for: a changed address, key or pinned fingerprint needs a new one. */
	key: string;
	/** The address, account and pin alone: a host's other key's connections share it. */
	place: string;
	client: Promise<Client>;
	leases: number;
	dead: boolean;
	idle?: NodeJS.Timeout;
};

const g = globalThis as unknown as { __nomosSshPool2?: Map<string, Entry[]> };
const pool = (g.__nomosSshPool2 ??= new Map<string, Entry[]>());

const keyOf = (h: SshTarget) => JSON.stringify([h.address, h.port, h.username, h.keyPath, h.hostKeyFingerprint]);
/** The same machine and account, whatever the key. */
const placeOf = (h: SshTarget) => JSON.stringify([h.address, h.port, h.username, h.hostKeyFingerprint]);

/** The TCP socket under an ssh2 client, to let an idle pooled connection not hold the process open. */
const socketOf = (c: Client) => (c as unknown as { _sock?: Socket })._sock;

function retire(name: string, e: Entry): void {
	e.dead = true;
	const list = pool.get(name);
	if (list?.includes(e)) {
		const rest = list.filter((x) => x !== e);
		if (rest.length) pool.set(name, rest);
		else pool.delete(name);
	}
	clearTimeout(e.idle);
	if (e.leases === 0)
		void e.client.then(
			(c) => c.end(),
			() => undefined
		);
}

function open(host: SshTarget, timeoutMs?: number): Entry {
	const entry: Entry = {
		key: keyOf(host),
		place: placeOf(host),
		leases: 0,
		dead: false,
		client: connect(host, timeoutMs, { keepaliveInterval: 10_000, keepaliveCountMax: 3 })
	};
	pool.set(host.name, [...(pool.get(host.name) ?? []), entry]);
	entry.client.then(
		(c) => {
			limitChannels(c, MAX_CHANNELS);
			c.on('close', () => retire(host.name, entry));
			c.on('error', () => retire(host.name, entry));
		},
		() => retire(host.name, entry)
	);
	return entry;
}

/**
 * An authenticated connection to `host` for a while: opened on first use (the host key checked
 * against the pin, as every new connection is), kept open between uses and shared, so an
 * approved command starts without a new handshake. The least busy of the host's connections is
 * lent; a second one opens when all have MAX_CHANNELS users (at most MAX_CONNECTIONS). A
 * connection that closed or errored is dropped and the next lease connects anew; a change of
 * the host's settings or pinned fingerprint retires the old ones. Commands on a connection take
 * a channel slot each (at most MAX_CHANNELS at once; more wait). Call `release` when done (not
 * `end`); `release(true)` when the connection may be broken (a dropped or hung command): it is
 * not used again.
 */
export async function lease(host: SshTarget, timeoutMs?: number): Promise<{ client: Client; release: (discard?: boolean) => void }> {
	// A host with two keys has connections for each (proxmox/key-role.ts): one key's lease neither
	// retires nor borrows the other's. A changed address, account or pin retires both; a replaced
	// key's idle connections are never lent again and close after IDLE_MS.
	const key = keyOf(host);
	for (const stale of (pool.get(host.name) ?? []).filter((x) => x.dead || x.place !== placeOf(host))) retire(host.name, stale);
	const live = (pool.get(host.name) ?? []).filter((x) => x.key === key);
	let e = live.reduce<Entry | undefined>((best, x) => (!best || x.leases < best.leases ? x : best), undefined);
	if (!e || (e.leases >= MAX_CHANNELS && live.length < MAX_CONNECTIONS)) e = open(host, timeoutMs);
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

/** Closes every pooled connection (process shutdown). */
export function closeAll(): void {
	for (const [name, list] of pool) {
		for (const e of list) {
			e.leases = 0;
			retire(name, e);
		}
	}
}

/** How many connections are pooled, to one host or to all (for tests and benches). */
export function pooledCount(hostName?: string): number {
	if (hostName !== undefined) return pool.get(hostName)?.length ?? 0;
	return [...pool.values()].reduce((n, list) => n + list.length, 0);
}
