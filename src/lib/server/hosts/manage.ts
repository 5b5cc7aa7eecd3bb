import type { TransactionSql } from 'postgres';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import {
	createHost,
	deleteHost,
	getHostById,
	listHosts,
	lockHost,
	pinHostFingerprint,
	recordHostCheck,
	updateHost,
	type Host,
	type HostInput
} from '../db/queries/hosts';
import { Refusal } from '../refusal';
import { readHostKey, runOnHost, SshError } from '../ssh/client';
import { answeredBy } from './reachability';

// The hosts Nomos reaches over SSH, as Settings manages them: every change is audited in its own
// transaction (who, what, which host); a key is pinned only as the host last presented it.

type Actor = { id: string; username: string };

function audit(tx: TransactionSql, actor: Actor, action: string, host: { id: string; name: string }, detail: Record<string, unknown> = {}) {
	return recordAudit(tx, {
		actor,
		action: `host.${action}`,
		route: 'settings',
		subjectType: 'host',
		subjectId: host.name,
		detail: { hostId: host.id, ...detail }
	});
}

const hostDetail = (h: { address: string; port: number; username: string; keyPath: string; mutationKeyPath: string | null }) => ({
	address: h.address,
	port: h.port,
	user: h.username,
	keyPath: h.keyPath,
	mutationKeyPath: h.mutationKeyPath
});

function uniqueViolation(e: unknown): never {
	const err = e as { code?: string; cause?: { code?: string } };
	if (err.code === '23505' || err.cause?.code === '23505') throw new Refusal('CONFLICT', 'A host with that name already exists.');
	throw e;
}

async function mustGet(hostId: string): Promise<Host> {
	const host = await getHostById(sql(), hostId);
	if (!host) throw new Refusal('NOT_FOUND', 'No such host.');
	return host;
}

/** Everyone sees the hosts; only admins see where the private keys live. */
export function hostsFor(role: string, hosts: Awaited<ReturnType<typeof listHosts>>) {
	return role === 'admin' ? hosts : hosts.map((h) => ({ ...h, keyPath: '', mutationKeyPath: h.mutationKeyPath === null ? null : '' }));
}

/** Adds a host (its name unique), audited. */
export async function addHost(actor: Actor, input: HostInput): Promise<Host> {
	return sql()
		.begin(async (tx) => {
			const row = await createHost(tx, input);
			await audit(tx, actor, 'created', row, hostDetail(row));
			return row;
		})
		.catch(uniqueViolation);
}

/** Changes a host's settings, audited. */
export async function changeHost(actor: Actor, hostId: string, input: HostInput): Promise<Host> {
	const row = await sql()
		.begin(async (tx) => {
			const row = await updateHost(tx, hostId, input);
			if (row) await audit(tx, actor, 'updated', row, hostDetail(row));
			return row;
		})
		.catch(uniqueViolation);
	if (!row) throw new Refusal('NOT_FOUND', 'No such host.');
	return row;
}

/** Removes a host, audited once: it is locked and read in the transaction, so of two removes at once only the one that removed it is. */
export async function removeHost(actor: Actor, hostId: string): Promise<void> {
	await sql().begin(async (tx) => {
		const host = await lockHost(tx, hostId);
		if (!host || !(await deleteHost(tx, hostId))) throw new Refusal('NOT_FOUND', 'No such host.');
		await audit(tx, actor, 'removed', host, hostDetail(host));
	});
}

/** Reads the key the host presents now, without authenticating, so the operator can pin it; the check is recorded either way. */
export async function scanHostKey(hostId: string): Promise<{ fingerprint: string; matchesPinned: boolean }> {
	const host = await mustGet(hostId);
	try {
		const seen = await readHostKey(host.address, host.port);
		await recordHostCheck(sql(), host.id, seen, null);
		return { fingerprint: seen, matchesPinned: host.hostKeyFingerprint === seen };
	} catch (e) {
		await recordHostCheck(sql(), host.id, null, (e as Error).message);
		throw new Refusal('PRECONDITION_FAILED', (e as Error).message);
	}
}

/** Pins the fingerprint the host last presented (no other), audited with the one it replaces. */
export async function pinHostKey(actor: Actor, hostId: string, fingerprint: string): Promise<Host> {
	const row = await sql().begin(async (tx) => {
		const before = await lockHost(tx, hostId);
		if (!before) throw new Refusal('NOT_FOUND', 'No such host.');
		const row = await pinHostFingerprint(tx, hostId, fingerprint);
		if (row) await audit(tx, actor, 'key_pinned', row, { fingerprint, previous: before.hostKeyFingerprint });
		return row;
	});
	if (!row) throw new Refusal('CONFLICT', 'That is not the fingerprint the host last presented; scan again.');
	return row;
}

/** Connects with the pinned key and the configured private key and runs `true`; the check is recorded either way. */
export async function testHost(hostId: string): Promise<{ ok: boolean; message: string }> {
	const host = await mustGet(hostId);
	try {
		const r = await runOnHost(host, ['true'], { timeoutMs: 10_000 });
		await recordHostCheck(sql(), host.id, host.hostKeyFingerprint, null);
		return { ok: r.exitCode === 0, message: `Connected as ${host.username}, ran a command in ${r.durationMs} ms.` };
	} catch (e) {
		const message = e instanceof SshError && e.localDetail ? e.localDetail : (e as Error).message;
		// An unreadable private key is Nomos's own problem: it says nothing of whether the host answers.
		await recordHostCheck(sql(), host.id, host.seenFingerprint, message, answeredBy(e));
		return { ok: false, message };
	}
}
