import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import ssh2 from 'ssh2';
import { getHostById, listHosts, recordGateCheck, type Host } from '../db/queries/hosts';
import { sql } from '../db/index';
import { catalogueVersion } from '../proxmox/gate-shapes';
import { hasTwoKeys, keyTarget, type KeyRole } from '../proxmox/key-role';
import { Refusal } from '../refusal';
import { GATE_STATES, type GateState } from '../../types/gate';
import { connect } from '../ssh/client';
import { GATE_REVISION, gateProblem, readGate, type GateAnswer } from '../ssh/gate';

// Settings → Hosts: what to install on a node (the gate, its allowlist, the key lines) and a
// check of what this Nomos's key reaches there. Files are read from deploy/ under the cwd, as
// drizzle/ is.

export const GATE_FILES = { gate: 'deploy/nomos-gate', allow: 'deploy/nomos-gate.allow' } as const;

async function sha256Of(path: string): Promise<string | null> {
	try {
		return createHash('sha256')
			.update(await readFile(resolve(path)))
			.digest('hex');
	} catch {
		return null;
	}
}

/** The public half of a private key file as an authorized_keys key (`ssh-ed25519 AAAA…`), or null when it cannot be read. */
export async function publicKeyOf(keyPath: string): Promise<string | null> {
	try {
		const parsed = ssh2.utils.parseKey(await readFile(keyPath));
		const key = Array.isArray(parsed) ? parsed[0] : parsed;
		if (!(key instanceof Error)) return `${key.type} ${key.getPublicSSH().toString('base64')}`;
	} catch {
		/* fall through to the .pub beside it */
	}
	try {
		const line = (await readFile(`${keyPath}.pub`, 'utf8')).trim().split(/\s+/);
		return line.length >= 2 ? `${line[0]} ${line[1]}` : null;
	} catch {
		return null;
	}
}

/** The forced command of a key in authorized_keys: the gate in the role Nomos uses that key for. */
export const gateCommand = (role: KeyRole) => `/usr/local/sbin/nomos-gate --role ${role}`;

/**
 * Each key's authorized_keys line: with one key, it does everything and is gated `--role mutate`;
 * with two, the first key reads (`--role read`) and the mutation key changes (`--role mutate`).
 */
export async function keyLines(h: Pick<Host, 'keyPath' | 'mutationKeyPath'>): Promise<{ role: KeyRole; line: string }[]> {
	const keys: [KeyRole, string][] = hasTwoKeys(h)
		? [
				['read', h.keyPath],
				['mutate', h.mutationKeyPath!]
			]
		: [['mutate', h.keyPath]];
	return Promise.all(
		keys.map(async ([role, path]) => ({
			role,
			line: `restrict,command="${gateCommand(role)}" ${(await publicKeyOf(path)) ?? `<the Nomos public key of ${path}>`}`
		}))
	);
}

/** The gate files with their sha256 (null: not found), the catalogue version, and each host's authorized_keys lines. */
export async function gateInstall() {
	const hosts = await listHosts(sql());
	return {
		version: catalogueVersion(),
		files: await Promise.all(Object.values(GATE_FILES).map(async (path) => ({ path, sha256: await sha256Of(path) }))),
		lines: (await Promise.all(hosts.map(async (h) => (await keyLines(h)).map((l) => ({ hostId: h.id, host: h.name, ...l }))))).flat()
	};
}

/** A host's gate check as stored (hosts.gate_*) and shown on its card. */
export interface GateCheck {
	state: GateState;
	/** What is wrong, by name (null: every key is gated as it should be, with this Nomos's catalogue). */
	problem: string | null;
	/** The catalogue the host's gate carries (null: no gate answered). */
	version: string | null;
	needed: string;
	checkedAt: string;
}

function stateOf(a: GateAnswer, role: KeyRole, needed: string): GateState {
	if (a.state !== 'gated') return a.state;
	if (a.role !== role) return 'wrong_role';
	return a.version === needed && a.revision >= GATE_REVISION ? 'gated' : 'old_version';
}

/** Asks what each of the host's keys reaches (readGate), over a connection of its own. */
async function answerOf(host: Host, role: KeyRole): Promise<GateAnswer> {
	try {
		const client = await connect(keyTarget(host, role));
		try {
			return await readGate(client);
		} finally {
			client.end();
		}
	} catch (e) {
		return { state: 'unknown', detail: (e as Error).message };
	}
}

/**
 * Checks every key of the host (one: gated as mutate; two: the read key as read, the mutation
 * key as mutate) and stores the worst finding on the host, so its card warns without a click
 * while a key still reaches a full shell. A gate of another catalogue is named.
 */
export async function checkGateOf(host: Host): Promise<GateCheck> {
	const needed = catalogueVersion();
	const roles: KeyRole[] = hasTwoKeys(host) ? ['read', 'mutate'] : ['mutate'];
	const found = await Promise.all(roles.map(async (role) => ({ role, answer: await answerOf(host, role) })));
	const states = found.map(({ role, answer }) => stateOf(answer, role, needed));
	const state = GATE_STATES.find((s) => states.includes(s)) ?? 'unknown';
	const problems = found.map(({ role, answer }) => gateProblem(host.name, answer, needed, role)).filter((p): p is string => p !== null);
	const problem = problems.length ? problems.join('; ') : null;
	const version = found.map(({ answer }) => (answer.state === 'gated' ? answer.version : null)).find((v) => v !== null) ?? null;
	await recordGateCheck(sql(), host.id, state, problem);
	return { state, problem, version, needed, checkedAt: new Date().toISOString() };
}

/** Settings → Hosts "Check the gate". */
export async function checkGate(hostId: string): Promise<GateCheck> {
	const host = await getHostById(sql(), hostId);
	if (!host) throw new Refusal('NOT_FOUND', 'No such host.');
	return checkGateOf(host);
}

/** How often a sync asks a host's keys again (one off-catalogue probe per key). */
export const GATE_RECHECK_MS = 6 * 3600_000;

/** Whether the host's stored gate check is missing (never asked, or its keys changed since) or older than GATE_RECHECK_MS. */
export const gateCheckDue = (host: Pick<Host, 'gateCheckedAt'>, now = Date.now()): boolean =>
	!host.gateCheckedAt || now - Date.parse(host.gateCheckedAt) >= GATE_RECHECK_MS;
