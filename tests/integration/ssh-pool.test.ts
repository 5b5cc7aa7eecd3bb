// One authenticated SSH connection per host, shared and kept open between uses, so an approved
// command starts without a new handshake — against the SSH Proxmox double, which counts
// handshakes and refuses sessions beyond MaxSessions like sshd.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getHostByName } from '../../src/lib/server/db/queries/hosts';
import { execArgv, HostKeyError, SshError } from '../../src/lib/server/ssh/client';
import { closeAll, lease, MAX_CHANNELS, MAX_CONNECTIONS, pooledCount, withHost } from '../../src/lib/server/ssh/pool';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, waitUntil } from '../helpers/executions';

useTestDatabase();
let pve: ProxmoxDouble;

beforeAll(async () => {
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] });
	await addHost(pve);
});
afterAll(async () => {
	closeAll();
	await pve?.close();
});

const host = async () => (await getHostByName(sql(), 'strong'))!;
const status = (h: Awaited<ReturnType<typeof host>>) => withHost(h, (c) => execArgv(c, ['pct', 'status', '100'], { timeoutMs: 10_000 }));

describe('pooled SSH connections', () => {
	it('commands one after another share one handshake; a batch beyond MAX_CHANNELS opens one more connection, no more', async () => {
		const h = await host();
		const before = pve.handshakes();
		for (let i = 0; i < 5; i++) expect((await status(h)).stdout).toContain('status: running');
		expect(pve.handshakes() - before).toBe(1);
		expect(pooledCount('strong')).toBe(1);
		const many = await Promise.all(Array.from({ length: 25 }, () => status(h)));
		expect(many.every((r) => r.exitCode === 0)).toBe(true);
		expect(MAX_CONNECTIONS).toBe(2);
		expect(pve.handshakes() - before).toBe(MAX_CONNECTIONS);
		expect(pooledCount('strong')).toBe(MAX_CONNECTIONS);
		// 25 at once fit through MAX_CHANNELS slots per connection; sshd (MaxSessions 10) would refuse more.
		expect(pve.maxOpenSessions()).toBeLessThanOrEqual(MAX_CHANNELS);
		expect(pve.maxOpenSessions()).toBeGreaterThan(1);
	});

	it('2 × MAX_CHANNELS long commands run side by side, none waits for a channel', async () => {
		const h = await host();
		const n = MAX_CHANNELS * MAX_CONNECTIONS;
		const from = pve.execTimes().length;
		const runs = await Promise.all(Array.from({ length: n }, () => withHost(h, (c) => execArgv(c, ['sleep', '3'], { timeoutMs: 20_000 }))));
		expect(runs.every((r) => r.exitCode === 0)).toBe(true);
		// All n were running at one moment: the last start came before the first end (with one
		// connection the ninth would only start after one of the first eight ended).
		const times = pve
			.execTimes()
			.slice(from)
			.filter((t) => t.command.includes('sleep'));
		expect(times).toHaveLength(n);
		expect(Math.max(...times.map((t) => t.at))).toBeLessThan(Math.min(...times.map((t) => t.endedAt!)));
	});

	it('a dropped connection is replaced on the next use', async () => {
		const h = await host();
		await status(h);
		const before = pve.handshakes();
		expect(pooledCount(h.name)).toBeGreaterThan(0);
		pve.dropConnections();
		// The pool retires the connection once it sees it close.
		await waitUntil(async () => pooledCount(h.name) === 0, 'the pool to retire the dropped connection');
		expect((await status(h)).exitCode).toBe(0);
		expect(pve.handshakes() - before).toBe(1);
	});

	it('a discarded lease is not reused', async () => {
		const h = await host();
		const first = await lease(h);
		first.release(true);
		const before = pve.handshakes();
		await status(h);
		expect(pve.handshakes() - before).toBe(1);
	});

	it('a changed pin retires the open connection: the new one is checked and refused', async () => {
		await status(await host());
		await sql()`update hosts set host_key_fingerprint = ${'SHA256:' + 'A'.repeat(43)} where name = 'strong'`;
		const before = pve.execLog().length;
		await expect(status(await host())).rejects.toBeInstanceOf(HostKeyError);
		expect(pve.execLog().length).toBe(before);
		await sql()`update hosts set host_key_fingerprint = ${pve.hostKeyFingerprint} where name = 'strong'`;
		expect((await status(await host())).exitCode).toBe(0);
	});

	it('an unreachable host fails with a readable error and leaves nothing pooled', async () => {
		const h = { ...(await host()), name: 'gone', port: 1 };
		await expect(withHost(h, (c) => execArgv(c, ['true']))).rejects.toBeInstanceOf(SshError);
		await new Promise((r) => setTimeout(r, 10));
		expect(pooledCount('gone')).toBe(0);
		expect(pooledCount('strong')).toBeGreaterThan(0);
	});
});
