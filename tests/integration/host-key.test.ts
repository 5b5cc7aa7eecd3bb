// Host-key pinning: a server presenting a different key than the pinned one is refused during
// the handshake (before authentication), and no execution ever runs against it.
import { readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import ssh2 from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getHostByName } from '../../src/lib/server/db/queries/hosts';
import { prepareExecution } from '../../src/lib/server/executions/prepare';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { connect, HostKeyError, readHostKey, SshError } from '../../src/lib/server/ssh/client';
import { generateHostKey, startProxmoxDouble, type KeyPair, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, decide, jobs, newOperator, newSession, useHub } from '../helpers/executions';

useTestDatabase();
useHub();

let real: ProxmoxDouble;
let impostor: ProxmoxDouble;
let impostorKey: KeyPair;
let operatorId: string;
let sessionId: string;

const seed = [
	{ vmid: 100, hostname: 'caddy', status: 'running' as const },
	{ vmid: 101, hostname: 'db', status: 'stopped' as const }
];

beforeAll(async () => {
	real = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed });
	impostorKey = await generateHostKey();
	// Same node, same client key accepted, same containers — only the host key differs.
	impostor = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed, hostKeyPath: impostorKey.privateKeyPath });
	await addHost(real);
	// `evil` answers at the impostor's address but is pinned to the real server's fingerprint. Its
	// client key is one the impostor accepts: only the host-key check can stop the connection.
	await sql()`
		insert into hosts (name, address, port, username, key_path, host_key_fingerprint)
		values ('evil', ${impostor.host}, ${impostor.port}, 'root', ${impostor.clientKeyPath}, ${real.hostKeyFingerprint})`;
	await sql()`
		insert into hosts (name, address, port, username, key_path)
		values ('fresh', ${real.host}, ${real.port}, 'root', ${real.clientKeyPath})`;
	await syncAllHosts();
	operatorId = await newOperator();
	sessionId = await newSession(operatorId);
});

afterAll(async () => {
	await impostor?.close();
	await real?.close();
	if (impostorKey) rmSync(dirname(impostorKey.privateKeyPath), { recursive: true, force: true });
});

describe('host key pinning', () => {
	it('the two servers really present different keys', async () => {
		expect(impostor.hostKeyFingerprint).not.toBe(real.hostKeyFingerprint);
		expect(impostor.hostKeyFingerprint).toBe(impostorKey.fingerprint);
		expect(await readHostKey(impostor.host, impostor.port)).toBe(impostor.hostKeyFingerprint);
		expect(await readHostKey(real.host, real.port)).toBe(real.hostKeyFingerprint);
	});

	it('connect refuses a mismatched key with a HostKeyError naming both fingerprints, before authenticating', async () => {
		const evil = (await getHostByName(sql(), 'evil'))!;
		const err = await connect(evil).then(
			(c) => {
				c.end();
				return null;
			},
			(e: unknown) => e
		);
		expect(err).toBeInstanceOf(HostKeyError);
		const e = err as HostKeyError;
		expect(e.host).toBe('evil');
		expect(e.expected).toBe(real.hostKeyFingerprint);
		expect(e.presented).toBe(impostor.hostKeyFingerprint);
		expect(e.message).toContain(real.hostKeyFingerprint);
		expect(e.message).toContain(impostor.hostKeyFingerprint);
		expect(e.message).toMatch(/does not match the pinned fingerprint .*refusing to connect/);
		// The connection never got as far as a session: nothing was executed or even requested.
		expect(impostor.execLog()).toEqual([]);
		expect(await impostor.argvLog()).toEqual([]);
	});

	it('sends no authentication request at all to a server with the wrong key', async () => {
		// A bare SSH server with the impostor's key that records every authentication attempt.
		const attempts: string[] = [];
		let handshakes = 0;
		// Each connection's end on the server's side: after it, no authentication request can come.
		const closed: Promise<void>[] = [];
		const server = new ssh2.Server({ hostKeys: [readFileSync(impostorKey.privateKeyPath)] }, (conn) => {
			closed.push(new Promise((r) => conn.once('close', () => r())));
			conn.on('error', () => undefined);
			conn.on('handshake', () => handshakes++);
			conn.on('authentication', (ctx) => {
				attempts.push(`${ctx.method}:${ctx.username}`);
				ctx.reject();
			});
		});
		await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
		try {
			const evil = (await getHostByName(sql(), 'evil'))!;
			const port = (server.address() as AddressInfo).port;
			const err = await connect({ ...evil, port }).catch((e: unknown) => e);
			expect(err).toBeInstanceOf(HostKeyError);
			expect((err as HostKeyError).presented).toBe(impostor.hostKeyFingerprint);
			expect(closed).toHaveLength(1);
			await closed[0];
			expect(attempts).toEqual([]);
			// …whereas with the right pin the same client does authenticate (proving the probe works).
			const err2 = await connect({ ...evil, port, hostKeyFingerprint: impostor.hostKeyFingerprint }).catch((e: unknown) => e);
			expect(err2).toBeInstanceOf(SshError);
			expect(attempts.length).toBeGreaterThan(0);
			expect(handshakes).toBeGreaterThanOrEqual(1);
		} finally {
			await new Promise((r) => server.close(r));
		}
	});

	it("the same host row with the impostor's own fingerprint connects, so the refusal is the host key alone", async () => {
		const evil = (await getHostByName(sql(), 'evil'))!;
		const c = await connect({ ...evil, hostKeyFingerprint: impostor.hostKeyFingerprint });
		c.end();
		expect(impostor.execLog()).toEqual([]);
	});

	it('inventory sync recorded the mismatch on the host row', async () => {
		const evil = (await getHostByName(sql(), 'evil'))!;
		expect(evil.lastError).toMatch(/does not match the pinned fingerprint/);
		expect(evil.seenFingerprint).toBe(impostor.hostKeyFingerprint);
		expect(evil.hostKeyFingerprint).toBe(real.hostKeyFingerprint);
	});

	it('an approved execution against the mismatched host fails with that error and runs nothing', async () => {
		const r = await requestExecution(sessionId, { target: 'evil/101', action: 'pct_start', params: {}, reason: 'start db' });
		expect('error' in r, JSON.stringify(r)).toBe(false);
		if ('error' in r) return;
		expect(r.execution).toMatchObject({ status: 'awaiting_approval', hostName: 'evil', target: 'lxc:evil/101', commandPreview: "'pct' 'start' '101'" });
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		expect(await jobs('executions__run')).toHaveLength(1);

		await runExecution(r.execution.id);
		const e = (await getExecution(sql(), r.execution.id))!;
		expect(e.status).toBe('failed');
		expect(e.error).toContain(
			`host key of evil does not match the pinned fingerprint (expected ${real.hostKeyFingerprint}, got ${impostor.hostKeyFingerprint})`
		);
		expect(e.steps).toEqual([]);
		expect(e.startedAt).not.toBeNull();
		expect(e.finishedAt).not.toBeNull();
		expect(impostor.execLog()).toEqual([]);
		expect(await impostor.argvLog()).toEqual([]);
		expect((await impostor.containers()).find((c) => c.vmid === 101)?.status).toBe('stopped');
		// The session hears about the failure.
		expect((await jobs('agent__continue_session')).map((j) => j.payload)).toEqual([{ sessionId, executionId: r.execution.id }]);
	});

	it('pct_create with an automatic vmid cannot even ask the impostor for the next id', async () => {
		const r = await prepareExecution({
			target: 'evil',
			action: 'pct_create',
			params: { hostname: 'x', template: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst' },
			reason: 'r'
		});
		expect(r).toMatchObject({ error: expect.stringContaining('could not reach evil to get the next free vmid') });
		expect((r as { error: string }).error).toContain(impostor.hostKeyFingerprint);
		expect(impostor.execLog()).toEqual([]);
	});

	it('an unpinned host is refused by prepareExecution with a clear error, without connecting', async () => {
		const before = real.execLog().length;
		for (const input of [
			{ target: 'fresh', action: 'pct_create', params: { hostname: 'x', template: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst' }, reason: 'r' },
			{ target: 'fresh/100', action: 'pct_status', params: {}, reason: 'r' },
			{ target: 'fresh', action: 'apt_upgrade', params: {}, reason: 'r' }
		]) {
			const r = await prepareExecution(input);
			expect(r).toEqual({ error: "host 'fresh' has no pinned host key yet", hint: 'the operator must confirm its fingerprint in Settings → Hosts' });
			const viaRequest = await requestExecution(sessionId, input);
			expect(viaRequest).toEqual(r);
		}
		expect(real.execLog().length).toBe(before);
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from executions where host_name = 'fresh'`;
		expect(n).toBe(0);
		// connect() itself also refuses an unpinned host (it presents a key nobody confirmed).
		const fresh = (await getHostByName(sql(), 'fresh'))!;
		const err = await connect(fresh).catch((e: unknown) => e);
		expect(err).toBeInstanceOf(HostKeyError);
		expect((err as Error).message).toMatch(/is not pinned yet \(it presented SHA256:/);
		expect(err).not.toBeInstanceOf(SshError);
	});
});
