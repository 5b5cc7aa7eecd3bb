import type { JobHelpers } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getEntity, listEntities, listLxcs } from '../../src/lib/server/db/queries/entities';
import { getHostByName } from '../../src/lib/server/db/queries/hosts';
import { fleetTools } from '../../src/lib/server/agent/tools/fleet';
import type { ToolContext } from '../../src/lib/server/agent/tools/context';
import { syncAllHosts, syncHost } from '../../src/lib/server/inventory/sync';
import { runOnHost } from '../../src/lib/server/ssh/client';
import { inventory__sync } from '../../tasks/inventory__sync';
import { connectTo, execOn } from '../doubles/proxmox/client';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { freePort } from '../helpers/ports';

useTestDatabase();

let pve: ProxmoxDouble;
const ctx: ToolContext = {
	sessionId: '00000000-0000-0000-0000-000000000000',
	messageId: '00000000-0000-0000-0000-000000000001',
	signal: new AbortController().signal,
	turn: { httpGets: 0 }
};
const tools = () => fleetTools(ctx);
const call = { toolCallId: 'x', messages: [] };
// Tool results are unions with ToolError; tests read them loosely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

async function pveSh(command: string) {
	const conn = await connectTo(pve);
	try {
		return await execOn(conn, command);
	} finally {
		conn.end();
	}
}

async function syncedEvents(): Promise<Record<string, unknown>[]> {
	const rows = await sql()<{ payload: Record<string, unknown> }[]>`
		select payload from events where type = 'inventory.synced' and session_id is null order by id`;
	return rows.map((r) => r.payload);
}

beforeAll(async () => {
	pve = await startProxmoxDouble({
		nodeName: 'strong',
		delayMs: 1,
		seed: [
			{
				vmid: 100,
				hostname: 'caddy',
				status: 'running',
				cores: 2,
				memory: 1024,
				features: 'nesting=1',
				net0: 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:64,ip=10.0.0.5/24,gw=10.0.0.1,type=veth'
			},
			{ vmid: 101, hostname: 'db', status: 'stopped', memory: 2048, diskGb: 20 },
			{ vmid: 102, hostname: 'web', status: 'running' },
			{ vmid: 103, hostname: 'scratch', status: 'stopped' }
		]
	});
	const [address, key, fp] = [pve.host, pve.clientKeyPath, pve.hostKeyFingerprint];
	await sql()`
		insert into hosts (name, address, port, username, key_path, host_key_fingerprint) values
			('strong', ${address}, ${pve.port}, 'root', ${key}, ${fp}),
			('unpinned', ${address}, ${pve.port}, 'root', ${key}, null),
			('down', ${address}, ${await freePort()}, 'root', ${key}, ${fp})`;
});

afterAll(async () => {
	await pve?.close();
});

describe('inventory sync', () => {
	it('syncs pinned hosts, skips unpinned ones and records unreachable ones without throwing', async () => {
		const results = await syncAllHosts();
		const by = Object.fromEntries(results.map((r) => [r.host, r]));
		expect(by.strong).toMatchObject({ ok: true, containers: 4, removed: 0 });
		expect(by.unpinned).toMatchObject({ ok: false, skipped: true });
		expect(by.down).toMatchObject({ ok: false });
		expect((by.down as { error: string }).error).toMatch(/SSH to down .* failed/);

		const down = await getHostByName(sql(), 'down');
		expect(down?.lastError).toMatch(/failed/);
		expect(down?.lastCheckedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
		const strong = await getHostByName(sql(), 'strong');
		expect(strong?.lastError).toBeNull();
		expect(strong?.seenFingerprint).toBe(pve.hostKeyFingerprint);
		expect((await getHostByName(sql(), 'unpinned'))?.lastCheckedAt).toBeNull();

		expect(await syncedEvents()).toEqual([{ host: 'strong', containers: 4 }]);
		expect(await listEntities(sql(), { kind: 'host' })).toHaveLength(1);
	});

	it('stores host and container attributes', async () => {
		const host = await getEntity(sql(), 'host:strong');
		expect(host).toMatchObject({ kind: 'host', externalId: 'strong', name: 'strong', hostName: 'strong' });
		expect(host!.attributes).toMatchObject({ pveStatus: 'online', maxcpu: 8, uptimeSec: 1_209_600 });
		expect(host!.attributes.cpuPercent).toBeGreaterThan(0);
		expect(host!.attributes.memLimitMb).toBe(32 * 1024);

		const cts = await listLxcs(sql(), 'strong');
		expect(cts.map((c) => [c.externalId, c.name])).toEqual([
			['strong/100', 'caddy'],
			['strong/101', 'db'],
			['strong/102', 'web'],
			['strong/103', 'scratch']
		]);
		const caddy = cts[0].attributes;
		expect(caddy).toMatchObject({
			vmid: 100,
			status: 'running',
			cores: 2,
			cpus: 2,
			memLimitMb: 1024,
			swapMb: 512,
			diskLimitGb: 8,
			ips: ['10.0.0.5'],
			ipMode: 'static',
			bridge: 'vmbr0',
			hwaddr: 'BC:24:11:00:00:64',
			hostname: 'caddy',
			ostype: 'debian',
			unprivileged: true,
			features: 'nesting=1'
		});
		for (const running of [cts[0], cts[2]]) {
			expect(running.attributes.cpuPercent).toBeGreaterThan(0);
			expect(running.attributes.memUsedMb).toBeGreaterThan(0);
			expect(running.attributes.uptimeSec).toBeGreaterThan(0);
		}
		expect(cts[1].attributes).toMatchObject({ status: 'stopped', cpuPercent: 0, memUsedMb: 0, memLimitMb: 2048, diskLimitGb: 20, ips: [], ipMode: 'dhcp' });
	});

	it('resolves entity refs and searches', async () => {
		const caddy = await getEntity(sql(), 'lxc:caddy');
		expect(caddy?.externalId).toBe('strong/100');
		expect((await getEntity(sql(), caddy!.id))?.name).toBe('caddy');
		expect((await getEntity(sql(), 'lxc:strong/101'))?.name).toBe('db');
		expect((await getEntity(sql(), 'lxc:CADDY'))?.id).toBe(caddy!.id);
		expect(await getEntity(sql(), 'lxc:nope')).toBeNull();
		expect((await listEntities(sql(), { query: 'CAD' })).map((e) => e.name)).toEqual(['caddy']);
		expect((await listEntities(sql(), { query: 'strong/10' })).length).toBe(4);
		expect(await listEntities(sql(), { kind: 'host', query: 'caddy' })).toEqual([]);
	});

	it('deletes containers that disappeared, in the same sync', async () => {
		const r = await pveSh('pct destroy 103');
		expect(r.code, r.stderr).toBe(0);
		const strong = (await getHostByName(sql(), 'strong'))!;
		const before = (await getEntity(sql(), 'lxc:strong/100'))!.seenAt;
		await new Promise((res) => setTimeout(res, 5));
		expect(await syncHost(strong)).toMatchObject({ ok: true, containers: 3, removed: 1 });
		expect(await getEntity(sql(), 'lxc:strong/103')).toBeNull();
		expect((await listLxcs(sql())).map((c) => c.name)).toEqual(['caddy', 'db', 'web']);
		expect(Date.parse((await getEntity(sql(), 'lxc:strong/100'))!.seenAt)).toBeGreaterThan(Date.parse(before));
		expect((await syncedEvents()).at(-1)).toEqual({ host: 'strong', containers: 3 });
	});

	it('runs as the inventory__sync task, for one host or all', async () => {
		const logs: string[] = [];
		const log = (m: string) => logs.push(m);
		const helpers = {
			logger: { info: log, warn: log, error: log, debug: log },
			abortSignal: new AbortController().signal
		} as unknown as JobHelpers;
		const n = (await syncedEvents()).length;
		await inventory__sync({ host: 'strong' }, helpers);
		expect(await syncedEvents()).toHaveLength(n + 1);
		await inventory__sync({ _cron: { ts: new Date().toISOString(), backfilled: false } }, helpers);
		expect(await syncedEvents()).toHaveLength(n + 2);
		expect(logs.some((l) => l.includes('down'))).toBe(true);
		await inventory__sync({ host: 'nowhere' }, helpers);
		expect(logs.at(-1)).toMatch(/unknown host "nowhere"/);
	});
});

describe('fleet tools', () => {
	it('list_lxcs returns every container with freshness and warns about failing hosts', async () => {
		const r: Loose = await tools().list_lxcs.execute!({}, call);
		expect(r.count).toBe(3);
		const caddy = r.containers.find((c: Loose) => c.name === 'caddy');
		expect(caddy).toMatchObject({ vmid: 100, host: 'strong', status: 'running', memLimitMb: 1024, ips: ['10.0.0.5'], uptime: '1h 0m' });
		expect(caddy.uptimeSec).toBeGreaterThanOrEqual(3600);
		expect(caddy.cpuPercent).toBeGreaterThan(0);
		expect(Date.parse(caddy.syncedAt)).toBeGreaterThan(Date.now() - 60_000);
		// A host that never answered: nothing known of its guests, which is not "none".
		expect(r.warnings.join('\n')).toMatch(/down: never read; down has never answered .*Nothing is known of its guests: unknown, not none\./);
		expect(r.warnings.join('\n')).toMatch(/unpinned: host key not pinned/);

		const one: Loose = await tools().list_lxcs.execute!({ host: 'strong' }, call);
		expect(one.count).toBe(3);
		expect(one.warnings).toBeUndefined();
		const bad: Loose = await tools().list_lxcs.execute!({ host: 'weak' }, call);
		expect(bad.error).toMatch(/unknown host "weak"/);
		expect(bad.hint).toMatch(/down, strong, unpinned/);
	});

	it('list_entities and get_entity', async () => {
		const all: Loose = await tools().list_entities.execute!({}, call);
		expect(all.entities.map((e: Loose) => e.ref)).toEqual(['host:strong', 'lxc:strong/100', 'lxc:strong/101', 'lxc:strong/102']);
		const q: Loose = await tools().list_entities.execute!({ kind: 'lxc', query: 'web' }, call);
		expect(q.entities).toHaveLength(1);
		expect(q.entities[0]).toMatchObject({ ref: 'lxc:strong/102', name: 'web', host: 'strong', status: 'running' });
		const badKind: Loose = await tools().list_entities.execute!({ kind: 'vm' }, call);
		expect(badKind.error).toMatch(/no entities of kind "vm"/);
		expect(badKind.hint).toMatch(/host \(1\), lxc \(3\)/);

		const e: Loose = await tools().get_entity.execute!({ id: 'lxc:caddy' }, call);
		expect(e).toMatchObject({ ref: 'lxc:strong/100', kind: 'lxc', name: 'caddy', host: 'strong', uptime: '1h 0m' });
		expect(e.attributes.features).toBe('nesting=1');
		const byId: Loose = await tools().get_entity.execute!({ id: e.id }, call);
		expect(byId.ref).toBe('lxc:strong/100');
		const miss: Loose = await tools().get_entity.execute!({ id: 'lxc:ghost' }, call);
		expect(miss.error).toMatch(/no entity "lxc:ghost"/);
		expect(miss.hint).toContain('lxc:strong/100 (caddy)');
	});

	it('get_lxc_state reads live by vmid and by name', async () => {
		await pveSh('pct start 101');
		const byVmid: Loose = await tools().get_lxc_state.execute!({ vmid: '101' }, call);
		expect(byVmid).toMatchObject({ vmid: 101, name: 'db', host: 'strong', status: 'running', live: true, stale: false, memLimitMb: 2048 });
		expect(byVmid.memUsedMb).toBeGreaterThan(0); // live: the stored row still says stopped
		expect(byVmid.config).toMatchObject({ hostname: 'db', memory: '2048' });
		expect((await getEntity(sql(), 'lxc:db'))!.attributes.status).toBe('stopped');

		const byName: Loose = await tools().get_lxc_state.execute!({ name: 'caddy' }, call);
		expect(byName).toMatchObject({ vmid: 100, status: 'running', live: true, ips: ['10.0.0.5'], features: 'nesting=1', cores: 2 });
		expect(typeof byName.checkedAt).toBe('string');
		const byRef: Loose = await tools().get_lxc_state.execute!({ name: 'strong/102' }, call);
		expect(byRef.name).toBe('web');

		const log = await pve.argvLog();
		expect(log).toContainEqual(['pct', 'status', '101', '--verbose']);
		expect(log).toContainEqual(['pct', 'config', '100']);
	});

	it('get_lxc_state returns hints for unknown or vanished containers', async () => {
		const unknown: Loose = await tools().get_lxc_state.execute!({ name: 'ghost' }, call);
		expect(unknown.error).toMatch(/no lxc "ghost"/);
		expect(unknown.hint).toContain('lxc:strong/100 (caddy)');
		const noVmid: Loose = await tools().get_lxc_state.execute!({ vmid: '999' }, call);
		expect(noVmid.error).toMatch(/no lxc "999"/);
		const both: Loose = await tools().get_lxc_state.execute!({ vmid: '100', name: 'caddy' }, call);
		expect(both.error).toMatch(/exactly one/);

		await pveSh('pct stop 102 && pct destroy 102');
		const gone: Loose = await tools().get_lxc_state.execute!({ vmid: '102' }, call);
		expect(gone.error).toMatch(/CT 102 no longer exists on strong/);
		expect(gone.hint).toMatch(/list_lxcs/);
	});

	it('get_lxc_state falls back to stored data when the host is unreachable', async () => {
		const strong = (await getHostByName(sql(), 'strong'))!;
		await sql()`update hosts set port = ${await freePort()} where id = ${strong.id}`;
		try {
			const r: Loose = await tools().get_lxc_state.execute!({ name: 'caddy' }, call);
			// The stored state, never given as current.
			expect(r).toMatchObject({ vmid: 100, name: 'caddy', status: 'unknown now (was running)', live: false, stale: true, memLimitMb: 1024 });
			expect(r.sshError).toMatch(/SSH to strong .* failed/);
			expect(typeof r.syncedAt).toBe('string');
		} finally {
			await sql()`update hosts set port = ${strong.port} where id = ${strong.id}`;
		}
		// the host is reachable again through the ordinary helper
		expect((await runOnHost(strong, ['pct', 'status', '100'])).stdout).toBe('status: running\n');
	});

	it('get_state_snapshot summarises the fleet', async () => {
		const r: Loose = await tools().get_state_snapshot.execute!({}, call);
		expect(r.totals).toEqual({ hosts: 3, containers: 3, running: 2, stopped: 1 });
		const strong = r.hosts.find((h: Loose) => h.name === 'strong');
		expect(strong).toMatchObject({
			status: 'online',
			cpus: 8,
			memLimitMb: 32768,
			uptime: '14d 0h',
			containers: { total: 3, running: 2, stopped: 1, other: 0 }
		});
		expect(strong.cts[0]).toMatch(/^100 caddy running cpu [\d.]+% mem \d+\/1024MB up 1h 0m ip 10\.0\.0\.5$/);
		expect(strong.cts[1]).toBe('101 db stopped mem limit 2048MB ip dhcp');
		expect(r.hosts.find((h: Loose) => h.name === 'down')).toMatchObject({
			status: expect.stringMatching(/^offline\/unknown: down has never answered/),
			syncedAt: null
		});
		expect(r.hosts.find((h: Loose) => h.name === 'unpinned')).toMatchObject({ status: 'unpinned' });
	});
});
