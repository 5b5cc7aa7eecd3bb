import type { RequestEvent } from '@sveltejs/kit';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { blastRadius } from '../../src/lib/server/db/queries/blast-radius';
import { createKnowledge } from '../../src/lib/server/db/queries/knowledge';
import { executionsRouter } from '../../src/lib/server/trpc/routers/executions';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { blastRadiusSummary } from '../../src/lib/blast-radius';
import { requestExecutionTool } from '../../src/lib/server/agent/tools/request-execution';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();

const caller = (user: { id: string; username: string; role: 'operator' | 'admin' } | null) =>
	createCallerFactory(executionsRouter)({ user, event: {} as RequestEvent });

async function ct(vmid: number, name: string, attrs: Record<string, unknown> = {}, notes = '') {
	const attributes = { vmid, status: 'running', ips: [], hostname: name, tags: [], ...attrs };
	await sql()`
		insert into entities (kind, external_id, name, host_name, attributes, notes)
		values ('lxc', ${`strong/${vmid}`}, ${name}, 'strong', ${JSON.stringify(attributes)}::text::jsonb, ${notes})`;
}

async function execution(
	target: string,
	action: string,
	params: Record<string, unknown> = {},
	status = 'awaiting_approval',
	classification = 'config_mutation'
) {
	const [r] = await sql()<{ id: string }[]>`
		insert into executions (host_name, target, action, params, classification, hash, status)
		values ('strong', ${target}, ${action}, ${JSON.stringify(params)}::text::jsonb, ${classification}, md5(random()::text), ${status})
		returning id`;
	return r.id;
}

const HOSTILE = '<img src=x onerror="alert(1)"> caddy admin';
let restart = '';
let notes: Record<string, string> = {};

beforeAll(async () => {
	// Pinned, so request_execution accepts it; port 1 refuses at once when the request warms a connection.
	await sql()`insert into hosts (name, address, port, key_path, host_key_fingerprint) values ('strong', '127.0.0.1', 1, '/k', 'SHA256:test')`;
	await sql()`insert into entities (kind, external_id, name, host_name, attributes)
		values ('host', 'strong', 'strong', 'strong', '{"node":"strong","pveStatus":"online"}')`;
	// The target: CT 101 "caddy" at 10.0.0.1.
	await ct(101, 'caddy', { ips: ['10.0.0.1'], description: 'reverse proxy' });
	// A neighbour at 10.0.0.10, and containers that point at one or the other.
	await ct(110, 'app10', { ips: ['10.0.0.10'], status: 'stopped' });
	await ct(102, 'nextcloud', { ips: ['10.0.0.2'], description: 'served through 10.0.0.1:443' });
	await ct(103, 'grafana', { ips: ['10.0.0.3'] }, 'dashboards are published at https://caddy.lan/grafana');
	await ct(104, 'backup', { ips: ['10.0.0.4'], description: 'pulls from 10.0.0.10 nightly' });
	await ct(105, 'pihole', { ips: ['10.0.0.5'], tags: ['dns'] });

	notes = {
		ip: (await createKnowledge(sql(), { title: 'Network map', body: '| host | ip |\n|--|--|\n| proxy | 10.0.0.1 |' })).id,
		vmid: (await createKnowledge(sql(), { title: 'Backups', body: 'CT 101 is backed up weekly; so is strong/110.' })).id,
		name: (await createKnowledge(sql(), { title: 'Caddy runbook', body: 'Reload after editing the Caddyfile.' })).id,
		hostile: (await createKnowledge(sql(), { title: HOSTILE, body: 'see 10.0.0.1' })).id,
		other: (await createKnowledge(sql(), { title: 'App 10', body: 'app10 listens on 10.0.0.10 port 8080; CT 110.' })).id
	};

	restart = await execution('lxc:strong/101', 'restart');
	await execution('lxc:strong/101', 'systemctl', { unit: 'caddy.service', op: 'reload' }, 'succeeded');
	await execution('lxc:strong/101', 'systemctl', { unit: 'caddy.service', op: 'restart' }, 'failed');
	await execution('lxc:strong/101', 'service_status', { unit: 'node-exporter.service' }, 'succeeded', 'read_only');
	await execution('lxc:strong/110', 'systemctl', { unit: 'app.service', op: 'restart' }, 'succeeded');
});

describe('blast radius', () => {
	it('lists the state, services, notes and referencing containers of a CT target', async () => {
		const b = (await blastRadius(sql(), restart))!;
		expect(b).toMatchObject({ executionId: restart, target: 'lxc:strong/101', kind: 'lxc', known: true, name: 'caddy', status: 'running' });
		expect(b.seenAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
		expect(b.identifiers).toEqual(['CT 101', 'caddy', '10.0.0.1']);

		// The latest execution per unit, only of this CT.
		expect(b.services).toEqual([
			expect.objectContaining({ unit: 'caddy.service', lastAction: 'systemctl restart', lastStatus: 'failed' }),
			expect.objectContaining({ unit: 'node-exporter.service', lastAction: 'service_status', lastStatus: 'succeeded' })
		]);

		const byId = new Map(b.notes.map((n) => [n.id, n]));
		expect(b.notesTotal).toBe(4);
		expect(byId.get(notes.ip)?.matched).toEqual(['10.0.0.1']);
		expect(byId.get(notes.vmid)?.matched).toEqual(['CT 101']);
		expect(byId.get(notes.name)?.matched).toEqual(['caddy']);
		// Text is data: a note's title comes back exactly as written.
		expect(byId.get(notes.hostile)).toMatchObject({ title: HOSTILE, matched: ['10.0.0.1', 'caddy'] });
		// 10.0.0.10 is not 10.0.0.1, and CT 110 is not CT 101.
		expect(byId.has(notes.other)).toBe(false);

		expect(b.referencedByTotal).toBe(2);
		expect(b.referencedBy).toEqual([
			{ ref: 'lxc:strong/102', name: 'nextcloud', status: 'running', where: ['config'], matched: ['10.0.0.1'] },
			{ ref: 'lxc:strong/103', name: 'grafana', status: 'running', where: ['notes'], matched: ['caddy'] }
		]);
		expect(b.containers).toEqual([]);
		expect(blastRadiusSummary(b)).toBe('running · 2 services · 4 notes · 2 CTs reference it');
	});

	it('matches the neighbour at 10.0.0.10 only where 10.0.0.10 is written', async () => {
		const id = await execution('lxc:strong/110', 'pct_stop');
		const b = (await blastRadius(sql(), id))!;
		expect(b).toMatchObject({ name: 'app10', status: 'stopped' });
		expect(b.notes.map((n) => n.id).sort()).toEqual([notes.vmid, notes.other].sort());
		expect(b.referencedBy.map((r) => r.ref)).toEqual(['lxc:strong/104']);
		expect(b.services.map((s) => s.unit)).toEqual(['app.service']);
	});

	it('lists the containers on a host target', async () => {
		const id = await execution('host:strong', 'apt_upgrade');
		const b = (await blastRadius(sql(), id))!;
		expect(b).toMatchObject({ kind: 'host', known: true, status: 'online', containersTotal: 6, containersRunning: 5 });
		expect(b.containers.map((c) => c.ref)).toEqual([
			'lxc:strong/101',
			'lxc:strong/102',
			'lxc:strong/103',
			'lxc:strong/104',
			'lxc:strong/105',
			'lxc:strong/110'
		]);
		expect(b.identifiers).toEqual(['strong', '127.0.0.1']);
		expect(blastRadiusSummary(b)).toBe('online · 6 CTs on it (5 running)');
	});

	it('says when the target is not in the inventory', async () => {
		const id = await execution('lxc:strong/999', 'pct_start');
		const b = (await blastRadius(sql(), id))!;
		expect(b).toMatchObject({ known: false, status: null, notes: [], referencedBy: [] });
		expect(blastRadiusSummary(b)).toBe('not in the inventory');
	});

	it('serves it over tRPC to signed-in operators only', async () => {
		const operator = caller({ id: '00000000-0000-0000-0000-000000000001', username: 'ops', role: 'operator' });
		expect((await operator.blastRadius({ executionId: restart })).notesTotal).toBe(4);
		await expect(operator.blastRadius({ executionId: crypto.randomUUID() })).rejects.toMatchObject({ code: 'NOT_FOUND' });
		await expect(operator.blastRadius({ executionId: "1' or '1'='1" })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
		await expect(caller(null).blastRadius({ executionId: restart })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
	});

	it('tells the agent the one-line summary when it requests a mutation', async () => {
		const [session] = await sql()<{ id: string }[]>`insert into chat_sessions default values returning id`;
		const t = requestExecutionTool({ sessionId: session.id, messageId: crypto.randomUUID(), signal: new AbortController().signal, turn: { httpGets: 0 } });
		const r = (await t.execute!(
			{ target: 'caddy', action: 'restart', params: {}, reason: 'apply the new Caddyfile' },
			{ toolCallId: 'c1', messages: [] }
		)) as Record<string, unknown>;
		expect(r).toMatchObject({ status: 'awaiting_approval', target: 'lxc:strong/101' });
		expect(r.blastRadius).toMatch(/^lxc:strong\/101: running · 2 services · 4 notes · 2 CTs reference it \(/);
		expect(String(r.blastRadius)).not.toContain('onerror');
	});
});
