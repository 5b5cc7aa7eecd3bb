// Settings → Hosts "Check the gate" (hosts.checkGate) against the real SSH double: the double's
// plain key reaches a full shell (warned), a command= key behind deploy/nomos-gate is gated with
// this Nomos's catalogue version; hosts.gate shows the files' sha256 and the key line.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { RequestEvent } from '@sveltejs/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { catalogueVersion } from '../../src/lib/server/proxmox/gate-shapes';
import { hostsRouter } from '../../src/lib/server/trpc/routers/hosts';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { generateKeyPair, startProxmoxDouble, type KeyPair, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();

const GATE = resolve('deploy/nomos-gate');
const ALLOW = resolve('deploy/nomos-gate.allow');
const dir = mkdtempSync(join(tmpdir(), 'nomos-gate-check-'));
const caller = (role: 'operator' | 'admin') =>
	createCallerFactory(hostsRouter)({ user: { id: '00000000-0000-0000-0000-000000000001', username: 'root', role }, event: {} as RequestEvent });
const admin = caller('admin');

let pve: ProxmoxDouble;
let gateKey: KeyPair;
const ids: Record<'plain' | 'gated', string> = {} as never;

beforeAll(async () => {
	gateKey = await generateKeyPair(dir, 'mutate');
	const pub = readFileSync(gateKey.publicKeyPath, 'utf8').trim();
	pve = await startProxmoxDouble({ delayMs: 1, authorizedKeys: `restrict,command="perl ${GATE} --role mutate --allow ${ALLOW}" ${pub}` });
	for (const [name, keyPath] of [
		['plain', pve.clientKeyPath],
		['gated', gateKey.privateKeyPath]
	] as const) {
		const [row] = await sql()<{ id: string }[]>`
			insert into hosts (name, address, port, username, key_path, host_key_fingerprint)
			values (${name}, ${pve.host}, ${pve.port}, 'root', ${keyPath}, ${pve.hostKeyFingerprint}) returning id`;
		ids[name] = row.id;
	}
}, 60_000);

afterAll(async () => {
	await pve?.close();
	rmSync(dir, { recursive: true, force: true });
});

describe('hosts.checkGate', () => {
	it('warns that a plain key still reaches a full shell, and stores it on the host', async () => {
		const r = await admin.checkGate({ id: ids.plain });
		expect(r.state).toBe('shell');
		expect(r.problem).toMatch(/the mutate key of plain still reaches a full shell/);
		const [row] = await sql()<{ gate_state: string; gate_problem: string; gate_checked_at: string | null }[]>`
			select gate_state, gate_problem, gate_checked_at from hosts where id = ${ids.plain}`;
		expect([row.gate_state, row.gate_problem]).toEqual(['shell', r.problem]);
		expect(row.gate_checked_at).not.toBeNull();
	}, 30_000);

	it('reports a command= gate key as gated with the catalogue version this Nomos needs', async () => {
		const r = await admin.checkGate({ id: ids.gated });
		expect(r).toMatchObject({ state: 'gated', version: catalogueVersion(), needed: catalogueVersion(), problem: null });
	}, 30_000);

	it('with two keys checks each in its role: a read key gated as mutate is named', async () => {
		// The gated key as the read key and the plain one as the mutation key: both findings, the worst (a full shell) first.
		await sql()`update hosts set mutation_key_path = ${pve.clientKeyPath} where id = ${ids.gated}`;
		try {
			const r = await admin.checkGate({ id: ids.gated });
			expect(r.state).toBe('shell');
			expect(r.problem).toBe(
				'the read key of gated is gated as a mutate key: fix its --role in authorized_keys; the mutate key of gated still reaches a full shell: install nomos-gate as its forced command (Settings → Hosts, Node gate)'
			);
		} finally {
			await sql()`update hosts set mutation_key_path = null where id = ${ids.gated}`;
		}
	}, 30_000);

	it('is for admins only, and validates the host id', async () => {
		await expect(caller('operator').checkGate({ id: ids.plain })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		await expect(admin.checkGate({ id: 'not-a-uuid' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
	});
});

describe('hosts.gate', () => {
	it('gives the files with their sha256 and each host its key line', async () => {
		const r = await admin.gate();
		const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
		expect(r.files).toEqual([
			{ path: 'deploy/nomos-gate', sha256: sha(GATE) },
			{ path: 'deploy/nomos-gate.allow', sha256: sha(ALLOW) }
		]);
		const lines = r.lines.filter((l) => l.hostId === ids.gated);
		const [type, b64] = readFileSync(gateKey.publicKeyPath, 'utf8').trim().split(/\s+/);
		expect(lines.map((l) => [l.role, l.line])).toEqual([['mutate', `restrict,command="/usr/local/sbin/nomos-gate --role mutate" ${type} ${b64}`]]);
	});

	it('with a second key, gives the read key `--role read` and the mutation key `--role mutate`', async () => {
		await sql()`update hosts set mutation_key_path = ${pve.clientKeyPath} where id = ${ids.gated}`;
		try {
			const r = await admin.gate();
			const pub = (p: string) => readFileSync(p, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
			expect(r.lines.filter((l) => l.hostId === ids.gated).map((l) => [l.role, l.line])).toEqual([
				['read', `restrict,command="/usr/local/sbin/nomos-gate --role read" ${pub(gateKey.publicKeyPath)}`],
				['mutate', `restrict,command="/usr/local/sbin/nomos-gate --role mutate" ${pub(`${pve.clientKeyPath}.pub`)}`]
			]);
		} finally {
			await sql()`update hosts set mutation_key_path = null where id = ${ids.gated}`;
		}
	});
});
