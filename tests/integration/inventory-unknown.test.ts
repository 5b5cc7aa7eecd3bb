// Unknown is not absent (issue #42): a sync whose read times out, stops half-way or gets no answer
// never removes or blanks a guest; the guests are kept as last seen, the host is marked, and the
// fleet tools say "unknown now … last seen … ago; strong has not answered since …", never that a
// guest is gone. Only a complete answer from the host removes a guest.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getHostByName } from '../../src/lib/server/db/queries/hosts';
import { resetEnvCache } from '../../src/lib/server/env';
import { hostReachability } from '../../src/lib/server/hosts/reachability';
import { syncHost } from '../../src/lib/server/inventory/sync';
import { getLxcStateTool } from '../../src/lib/server/agent/tools/get-lxc-state';
import { getStateSnapshotTool } from '../../src/lib/server/agent/tools/get-state-snapshot';
import { listEntitiesTool } from '../../src/lib/server/agent/tools/list-entities';
import { listLxcsTool } from '../../src/lib/server/agent/tools/list-lxcs';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost } from '../helpers/executions';

useTestDatabase();
let pve: ProxmoxDouble;
let never: ProxmoxDouble;

const ctx = () => ({ sessionId: 's', messageId: 'm', signal: new AbortController().signal, turn: { httpGets: 0 } });
const call = <T>(t: { execute?: (input: never, o: never) => unknown }, input: unknown): Promise<T> =>
	(t.execute as (i: unknown, o: unknown) => Promise<T>)(input, { toolCallId: 't', messages: [] });
type Row = { vmid: number; name: string; status: string; ips: string[]; stale?: string };
const listLxcs = (input: { host?: string } = {}) => call<{ count: number; containers: Row[]; warnings?: string[] }>(listLxcsTool(ctx()), input);

const cts = async () =>
	await sql()<{ externalId: string; name: string; attributes: Record<string, unknown>; seenAt: string }[]>`
		select external_id as "externalId", name, attributes, seen_at as "seenAt" from entities where kind = 'lxc' and host_name = 'strong' order by external_id`;
const host = async (name = 'strong') => (await getHostByName(sql(), name))!;
const READ_MS = 2_500;
const strong = async () => syncHost(await host(), { timeoutMs: READ_MS });

beforeAll(async () => {
	pve = await startProxmoxDouble({
		nodeName: 'strong',
		delayMs: 1,
		seed: [
			{ vmid: 100, hostname: 'caddy', status: 'running', net0: 'name=eth0,bridge=vmbr0,ip=10.0.0.5/24,gw=10.0.0.1,type=veth' },
			{ vmid: 101, hostname: 'media', status: 'running' },
			{ vmid: 102, hostname: 'backup', status: 'stopped' }
		]
	});
	never = await startProxmoxDouble({ nodeName: 'cold', delayMs: 1 });
	never.setReachable(false); // powered off from the start: every connection is cut at once
	await addHost(pve);
	await addHost(never);
	expect(await syncHost(await host())).toMatchObject({ ok: true, containers: 3 });
	// Fleet tools read the inventory through their own refresh: keep its commands short here.
	process.env.NOMOS_INVENTORY_READ_S = String(READ_MS / 1000);
	resetEnvCache();
});
afterAll(async () => {
	delete process.env.NOMOS_INVENTORY_READ_S;
	resetEnvCache();
	await pve?.close();
	await never?.close();
});
afterEach(async () => {
	await pve.setFault('slow', null);
	await pve.setFault('hang', null);
});

describe('a read that does not answer changes nothing', () => {
	it('a host slowed past the read timeout: the guests are kept as they were, the host is marked not answering', async () => {
		const before = await cts();
		const answeredAt = (await host()).lastAnswerAt;
		expect(answeredAt).not.toBeNull();
		await pve.setFault('slow', { tool: 'pvesh', ms: 8_000 });
		const r = await strong();
		expect(r).toMatchObject({ ok: false, error: expect.stringMatching(/timed out after 3 s/) });
		expect(await cts()).toEqual(before);
		const h = await host();
		expect(h.unansweredSince).not.toBeNull();
		expect(h.lastAnswerAt).toBe(answeredAt);
		expect(await hostReachability(sql(), 'strong')).toMatchObject({
			state: 'offline',
			lastAnswerAt: answeredAt,
			why: expect.stringMatching(/^strong has not answered since \d\d:\d\d UTC: .*timed out/)
		});
	});

	it('list_lxcs says each guest is unknown now, as last seen and why; it never says fewer guests', async () => {
		// Stale by age too: the tool's own refresh runs into the slow host and gives up at its timeout.
		await sql()`update entities set seen_at = seen_at - interval '12 minutes' where host_name = 'strong' or external_id = 'strong'`;
		await pve.setFault('slow', { tool: 'pvesh', ms: 8_000 });
		const r = await listLxcs({ host: 'strong' });
		expect(r.count).toBe(3);
		for (const c of r.containers) {
			expect(c.status).toMatch(/^unknown now \(was (running|stopped)\)$/);
			expect(c.stale).toMatch(/^last seen 12 min ago \(\d\d:\d\d UTC\); strong has not answered since \d\d:\d\d UTC: its state now is unknown$/);
		}
		expect(r.containers.map((c) => [c.vmid, c.status])).toEqual([
			[100, 'unknown now (was running)'],
			[101, 'unknown now (was running)'],
			[102, 'unknown now (was stopped)']
		]);
		expect(r.warnings?.join('\n')).toMatch(/a guest missing from an old read is not known to be absent/);
		expect(JSON.stringify(r)).not.toMatch(/does not exist|no longer exists|not found/);
	});

	it('get_state_snapshot and list_entities say the same; get_lxc_state gives no stored status as current', async () => {
		await pve.setFault('slow', { tool: 'pct', ms: 8_000 });
		await pve.setFault('hang', 'pvesh');
		const snap = await call<{ hosts: { name: string; status: string; cts: string[] }[] }>(getStateSnapshotTool(ctx()), {});
		const s = snap.hosts.find((h) => h.name === 'strong')!;
		expect(s.status).toMatch(/^offline\/unknown: strong has not answered since .*its guests are unknown, not absent$/);
		expect(s.cts).toHaveLength(3);
		expect(s.cts[0]).toMatch(/^100 caddy unknown now \(was running\) — last seen 12 min ago/);
		const cold = snap.hosts.find((h) => h.name === 'cold')!;
		expect(cold.status).toMatch(/^offline\/unknown: cold has never answered/);

		const list = await call<{ entities: { ref: string; status: string; stale?: string }[] }>(listEntitiesTool(ctx()), { kind: 'lxc' });
		expect(list.entities.map((e) => e.status)).toEqual(['unknown now (was running)', 'unknown now (was running)', 'unknown now (was stopped)']);

		const one = await call<Record<string, unknown>>(getLxcStateTool(ctx()), { vmid: '101' });
		expect(one).toMatchObject({ vmid: 101, status: 'unknown now (was running)', live: false, stale: true });
		expect(one.note).toMatch(/^last seen 12 min ago .*could not check CT 101 now: pct status 101 --verbose: timed out/);
		expect(one.error).toBeUndefined();
	});

	it('a read stopped half-way (configs never answer): the listing is new, what the configs said is kept', async () => {
		await pve.setFault('hang', 'pct');
		const before = new Map((await cts()).map((c) => [c.externalId, c]));
		expect(await strong()).toMatchObject({ ok: true, containers: 3 });
		const after = await cts();
		expect(after).toHaveLength(3);
		for (const c of after) {
			const was = before.get(c.externalId)!;
			expect(c.name).toBe(was.name);
			expect(c.attributes).toMatchObject({
				hostname: was.attributes.hostname,
				ips: was.attributes.ips,
				ipMode: was.attributes.ipMode,
				ostype: was.attributes.ostype,
				configAsOf: was.seenAt
			});
			expect(c.attributes.configError).toMatch(/pct config \d+: timed out/);
		}
		expect(after[0].attributes).toMatchObject({ ips: ['10.0.0.5'], ipMode: 'static', hostname: 'caddy', status: 'running' });
		// It answered: up again.
		expect((await host()).unansweredSince).toBeNull();
		expect((await hostReachability(sql(), 'strong')).state).toBe('up');
	});

	it('only a complete answer removes a guest', async () => {
		await rm(join(pve.stateDir, 'cts', '102.json'));
		await pve.setFault('slow', { tool: 'pvesh', ms: 8_000 });
		expect((await strong()).ok).toBe(false);
		expect((await cts()).map((c) => c.externalId)).toEqual(['strong/100', 'strong/101', 'strong/102']);
		await pve.setFault('slow', null);
		expect(await strong()).toMatchObject({ ok: true, removed: 1 });
		expect((await cts()).map((c) => c.externalId)).toEqual(['strong/100', 'strong/101']);
		const r = await listLxcs({ host: 'strong' });
		expect(r.containers.map((c) => c.status)).toEqual(['running', 'running']);
		expect(r.warnings).toBeUndefined();
	});
});

describe('hostReachability', () => {
	it('up, offline (never answered), unknown (unpinned, not configured)', async () => {
		expect(await hostReachability(sql(), 'strong')).toMatchObject({ state: 'up', since: expect.any(String) });
		await syncHost(await host('cold'), { timeoutMs: READ_MS });
		expect(await hostReachability(sql(), 'cold')).toMatchObject({
			state: 'offline',
			lastAnswerAt: null,
			since: expect.any(String),
			why: expect.stringMatching(/^cold has never answered/)
		});
		await sql()`insert into hosts (name, address, port, username, key_path) values ('fresh', '127.0.0.1', 1, 'root', '/k')`;
		expect(await hostReachability(sql(), 'fresh')).toMatchObject({ state: 'unknown', why: expect.stringMatching(/not pinned/) });
		expect(await hostReachability(sql(), 'nope')).toMatchObject({ state: 'unknown', why: 'no host named "nope" is configured in Nomos' });
	});
});
