// Fleet tools never answer from an inventory that was never synced or is stale, they say how
// fresh their answer is, and the inventory forgets what the hosts no longer have.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { deleteHost, getHostByName } from '../../src/lib/server/db/queries/hosts';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { listLxcsTool } from '../../src/lib/server/agent/tools/list-lxcs';
import { useStage } from '../helpers/stage';

const {
	hosts: [pve]
} = useStage({
	hub: false,
	sync: false,
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 101, hostname: 'media', status: 'running' },
				{ vmid: 102, hostname: 'backup', status: 'stopped' }
			]
		},
		{ nodeName: 'weak', seed: [{ vmid: 200, hostname: 'old', status: 'running' }] }
	]
});

const listLxcs = (input: { host?: string } = {}) =>
	listLxcsTool({ sessionId: 's', messageId: 'm', signal: new AbortController().signal, turn: { httpGets: 0 } }).execute!(input, {
		toolCallId: 't',
		messages: []
	}) as unknown as Promise<{
		count: number;
		containers: Array<{ vmid: number; name: string }>;
		inventoryAsOf: Record<string, { syncedAt: string | null; ageSeconds: number | null }>;
	}>;

describe('fleet tools and inventory freshness', () => {
	it('right after start (never synced) list_lxcs reads the hosts live instead of answering "0 containers"', async () => {
		const [{ n }] = await sql()`select count(*)::int as n from entities`;
		expect(n).toBe(0);
		const r = await listLxcs({ host: 'strong' });
		expect(r.count).toBe(3);
		expect(r.inventoryAsOf.strong).toMatchObject({ ageSeconds: 0 });
	});

	it('a stale inventory is refreshed before answering; a fresh one is not', async () => {
		await sql()`update entities set seen_at = now() - interval '10 minutes' where host_name = 'strong' or external_id = 'strong'`;
		const before = (await pve.argvLog()).length;
		const r = await listLxcs({ host: 'strong' });
		expect((await pve.argvLog()).length).toBeGreaterThan(before);
		expect(r.inventoryAsOf.strong.ageSeconds).toBeLessThan(5);
		const again = (await pve.argvLog()).length;
		await listLxcs({ host: 'strong' });
		expect((await pve.argvLog()).length).toBe(again);
	});

	it('a destroyed container disappears with the next sync, and a removed host takes its containers along', async () => {
		// CT 102 destroyed on the host, outside Nomos.
		await rm(join(pve.stateDir, 'cts', '102.json'));
		await syncAllHosts();
		expect((await listLxcs({ host: 'strong' })).containers.map((c) => c.vmid)).toEqual([100, 101]);
		expect((await listLxcs({ host: 'weak' })).count).toBe(1);

		const weak = (await getHostByName(sql(), 'weak'))!;
		await sql().begin((tx) => deleteHost(tx, weak.id));
		const [{ n }] = await sql()`select count(*)::int as n from entities where host_name = 'weak' or external_id = 'weak'`;
		expect(n).toBe(0);
		const all = await listLxcs();
		expect(all.containers.map((c) => c.name)).not.toContain('old');
		expect(Object.keys(all.inventoryAsOf)).toEqual(['strong']);
	});

	it('entities of hosts removed outside the app (config, SQL) are dropped at the next full sync', async () => {
		await sql()`insert into entities (kind, external_id, name, host_name) values ('lxc', 'ghost/300', 'ghost', 'ghost'), ('host', 'ghost', 'ghost', 'ghost')`;
		await syncAllHosts();
		const [{ n }] = await sql()`select count(*)::int as n from entities where host_name = 'ghost'`;
		expect(n).toBe(0);
	});
});
