// The later read wins, not the later write: a whole-host sync that read the host before a change
// (a new container, a started one) and writes after the continuation's read-back of that
// container must not put back what it saw then, nor drop the new container.
import type { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { deleteHost, getHostByName } from '../../src/lib/server/db/queries/hosts';
import { refreshContainer, syncHost } from '../../src/lib/server/inventory/sync';
import { connectTo, execOn } from '../doubles/proxmox/client';
import { startProxmoxDouble } from '../doubles/proxmox/server';
import { addHost, waitUntil } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { pve } = useStage({
	hub: false,
	sync: false,
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'stopped' },
				{ vmid: 101, hostname: 'media', status: 'running' }
			]
		}
	]
});
let ssh: Client;

beforeAll(async () => {
	ssh = await connectTo(pve);
});
afterAll(async () => {
	ssh?.end();
});

const entity = async (vmid: number) =>
	(
		await sql()<{ status: string | null }[]>`select attributes ->> 'status' as status from entities where kind = 'lxc' and external_id = ${`strong/${vmid}`}`
	)[0] ?? null;

/**
 * Starts a whole-host sync that has listed the containers and then waits on one `pct config`
 * (a slow host) until `release` is called; resolves to the sync's result.
 */
async function stalledSync(vmid: number, ms = 1500): Promise<{ done: ReturnType<typeof syncHost>; release: () => Promise<void> }> {
	const host = (await getHostByName(sql(), 'strong'))!;
	await pve.setFault('slow', { tool: 'pct', match: `config ${vmid}`, ms });
	const from = (await pve.argvLog()).length;
	const done = syncHost(host);
	// The fake logs its argv right before it reads the faults: from then on this one is slow.
	const reading = async () => (await pve.argvLog()).slice(from).some((a) => a.join(' ') === `pct config ${vmid}`) || null;
	await waitUntil(reading, `the sync reading CT ${vmid}`, { timeoutMs: 10_000, intervalMs: 10 });
	return { done, release: () => pve.setFault('slow', null) };
}

describe('inventory writes ordered by when they read', () => {
	it('a sync that read before a change and writes after its read-back keeps the read-back', async () => {
		const host = (await getHostByName(sql(), 'strong'))!;
		await syncHost(host);
		expect(await entity(100)).toEqual({ status: 'stopped' });

		// A slow host: the sync has listed the containers and waits on one's config.
		const sync = await stalledSync(101);

		// Meanwhile on the host: CT 100 starts and CT 150 is created; the continuation reads both back.
		expect((await execOn(ssh, 'pct start 100')).code).toBe(0);
		expect((await execOn(ssh, 'pct create 150 local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst --hostname fresh --storage local-lvm')).code).toBe(0);
		expect(await refreshContainer('strong', 100)).toEqual({ ok: true, gone: false });
		expect(await refreshContainer('strong', 150)).toEqual({ ok: true, gone: false });
		expect(await entity(100)).toEqual({ status: 'running' });

		await sync.release();
		expect(await sync.done).toMatchObject({ ok: true });
		// The sync's older view neither stopped CT 100 again nor dropped CT 150.
		expect(await entity(100)).toEqual({ status: 'running' });
		expect(await entity(150)).not.toBeNull();

		// The next sync, which read after the change, sees it all.
		expect(await syncHost(host)).toMatchObject({ ok: true, containers: 3 });
		expect(await entity(150)).not.toBeNull();
	});

	it('a container destroyed while a sync reads does not come back when that sync writes', async () => {
		const host = (await getHostByName(sql(), 'strong'))!;
		await syncHost(host);
		expect(await entity(101)).toEqual({ status: 'running' });

		const sync = await stalledSync(100);

		// Meanwhile CT 101 is stopped and destroyed; the read-back finds it gone.
		expect((await execOn(ssh, 'pct stop 101')).code).toBe(0);
		expect((await execOn(ssh, 'pct destroy 101')).code).toBe(0);
		expect(await refreshContainer('strong', 101)).toEqual({ ok: true, gone: true });
		expect(await entity(101)).toBeNull();

		await sync.release();
		expect(await sync.done).toMatchObject({ ok: true });
		// That sync listed CT 101 before it went: it stays gone.
		expect(await entity(101)).toBeNull();

		// The same id used again is seen again by the next read.
		expect((await execOn(ssh, 'pct create 101 local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst --hostname again --storage local-lvm')).code).toBe(0);
		expect(await syncHost(host)).toMatchObject({ ok: true });
		expect(await entity(101)).toEqual({ status: 'stopped' });
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from entity_gone`;
		expect(n).toBe(0);
	});

	it('one the inventory never held, destroyed while a sync reads, stays out too', async () => {
		// Created behind the inventory's back (no read-back, no sync yet).
		expect((await execOn(ssh, 'pct create 160 local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst --hostname unseen --storage local-lvm')).code).toBe(0);
		const sync = await stalledSync(100);
		expect((await execOn(ssh, 'pct destroy 160')).code).toBe(0);
		expect(await refreshContainer('strong', 160)).toEqual({ ok: true, gone: true });
		await sync.release();
		expect(await sync.done).toMatchObject({ ok: true });
		expect(await entity(160)).toBeNull();
	});

	it('a host removed while its sync reads stays removed when that sync writes', async () => {
		const second = await startProxmoxDouble({ nodeName: 'spare', delayMs: 1, seed: [{ vmid: 300, hostname: 'leaving', status: 'running' }] });
		try {
			await addHost(second);
			const spare = (await getHostByName(sql(), 'spare'))!;
			await second.setFault('slow', { tool: 'pct', match: 'config 300', ms: 1500 });
			const from = (await second.argvLog()).length;
			const sync = syncHost(spare);
			await waitUntil(async () => (await second.argvLog()).slice(from).some((a) => a.join(' ') === 'pct config 300') || null, 'the sync reading CT 300', {
				timeoutMs: 10_000,
				intervalMs: 10
			});
			expect(await sql().begin((tx) => deleteHost(tx, spare.id))).toBe(true);
			expect(await sync).toMatchObject({ ok: true });
			const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from entities where host_name = 'spare' or external_id = 'spare'`;
			expect(n).toBe(0);
			expect(await refreshContainer('spare', 300)).toMatchObject({ ok: false });
		} finally {
			await second.close();
		}
	});

	it('of two whole-host syncs, the one that read first and writes last adds nothing', async () => {
		const host = (await getHostByName(sql(), 'strong'))!;
		expect((await execOn(ssh, 'pct create 170 local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst --hostname brief --storage local-lvm')).code).toBe(0);
		// The first lists CT 170 and stalls; then 170 is destroyed and a second sync reads and writes.
		const first = await stalledSync(100, 3000);
		await pve.setFault('slow', null);
		expect((await execOn(ssh, 'pct destroy 170')).code).toBe(0);
		expect(await syncHost(host)).toMatchObject({ ok: true });
		expect(await entity(170)).toBeNull();
		expect(await first.done).toMatchObject({ ok: true });
		expect(await entity(170)).toBeNull();
	});
});
