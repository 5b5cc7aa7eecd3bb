import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import ssh2 from 'ssh2';
import { getHostById, listHosts } from '../db/queries/hosts';
import { sql } from '../db/index';
import { catalogueVersion } from '../proxmox/gate-shapes';
import { Refusal } from '../refusal';
import { connect } from '../ssh/client';
import { gateProblem, readGate } from '../ssh/gate';

// Settings → Hosts: what to install on a node (the gate, its allowlist, the key lines) and a
// check of what this Nomos's key reaches there. Files are read from deploy/ under the cwd, as
// drizzle/ is.

export const GATE_FILES = { gate: 'deploy/nomos-gate', allow: 'deploy/nomos-gate.allow' } as const;
export const GATE_COMMAND = '/usr/local/sbin/nomos-gate --role mutate';

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

/** The gate files with their sha256 (null: not found), the catalogue version, and each host's authorized_keys line. */
export async function gateInstall() {
	const hosts = await listHosts(sql());
	return {
		version: catalogueVersion(),
		files: await Promise.all(Object.values(GATE_FILES).map(async (path) => ({ path, sha256: await sha256Of(path) }))),
		lines: await Promise.all(
			hosts.map(async (h) => ({
				hostId: h.id,
				host: h.name,
				line: `restrict,command="${GATE_COMMAND}" ${(await publicKeyOf(h.keyPath)) ?? '<your Nomos public key>'}`
			}))
		)
	};
}

export type GateCheck =
	| { state: 'gated'; version: string; role: string; needed: string; problem: string | null }
	| { state: 'shell'; problem: string }
	| { state: 'unknown'; problem: string };

/** Connects with the host's key and asks what it reaches (readGate); a gate that does not fit this Nomos is named. */
export async function checkGate(hostId: string): Promise<GateCheck> {
	const host = await getHostById(sql(), hostId);
	if (!host) throw new Refusal('NOT_FOUND', 'No such host.');
	const needed = catalogueVersion();
	let answer;
	try {
		const client = await connect(host);
		try {
			answer = await readGate(client);
		} finally {
			client.end();
		}
	} catch (e) {
		answer = { state: 'unknown', detail: (e as Error).message } as const;
	}
	const problem = gateProblem(host.name, answer, needed, 'mutate');
	if (answer.state === 'gated') return { state: 'gated', version: answer.version, role: answer.role, needed, problem };
	return { state: answer.state, problem: problem! };
}
