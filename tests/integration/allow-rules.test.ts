// Always-allow rules against real Postgres, the SSH Proxmox double and the scripted model: a
// matching request is approved at once (route rule:<id> in approvals and audit) and runs; the
// agent is told the rules and that its request runs; destructive actions, violated constraints,
// revoked rules, other hosts and non-admins never get through.
import type { RequestEvent } from '@sveltejs/kit';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { listAudit } from '../../src/lib/server/db/queries/audit';
import { revokeAllowRule } from '../../src/lib/server/db/queries/allow-rules';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { approveEdited, checkEdit } from '../../src/lib/server/executions/edit';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { allowRulesRouter } from '../../src/lib/server/trpc/routers/allow-rules';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { parsePattern, type RuleFields } from '../../src/lib/schemas/allow-rules';
import { waitForLockWaiter } from '../helpers/db';
import { DEBIAN, freshSession, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const {
	llm,
	hosts: [strong]
} = useStage({
	model: true,
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 101, hostname: 'db', status: 'stopped' },
				{ vmid: 102, hostname: 'web-1', status: 'stopped' },
				{ vmid: 103, hostname: 'mail', status: 'stopped' },
				{ vmid: 104, hostname: 'web-2', status: 'stopped' }
			]
		},
		{ nodeName: 'weak', seed: [{ vmid: 200, hostname: 'web-3', status: 'stopped' }] }
	]
});
let admin: { id: string; username: string; role: 'admin' };
let plain: { id: string; username: string; role: 'operator' };
let sessionId: string;

const caller = (user: { id: string; username: string; role: 'admin' | 'operator' }) =>
	createCallerFactory(allowRulesRouter)({ user, event: {} as RequestEvent });

beforeAll(async () => {
	admin = { id: await newOperator('root-admin'), username: 'root-admin', role: 'admin' };
	const opId = await newOperator('plain-op');
	await sql()`update operators set role = 'operator' where id = ${opId}`;
	plain = { id: opId, username: 'plain-op', role: 'operator' };
	sessionId = await newSession(admin.id, 'rules');
});

// Each test starts with no rule in force.
beforeEach(async () => {
	await sql()`update allow_rules set revoked_at = now() where revoked_at is null`;
});

async function rule(fields: RuleFields): Promise<string> {
	return (await caller(admin).create(fields)).id;
}

async function request(input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await requestExecution(sessionId, { reason: 'test', ...input });
	if ('error' in r) throw new Error(r.error);
	return r.execution;
}

const approvals = (id: string) => sql()<{ route: string; reason: string | null; decidedBy: string | null }[]>`
	select route, reason, decided_by as "decidedBy" from approvals where execution_id = ${id}`;
const audits = (id: string) =>
	sql()<{ action: string; route: string; actorName: string | null; detail: Record<string, unknown> }[]>`
		select action, route, actor_name as "actorName", detail from audit_log where subject_id = ${id} order by id`;

describe('always-allow rules', () => {
	it('approves a matching request at once, the agent is told, and it runs', async () => {
		const id = await rule({ action: 'pct_start', pattern: 'lxc:strong/*' });

		await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'start db' }], status: 'complete', origin: 'chat' }));
		llm.push(
			{ toolCalls: [{ name: 'request_execution', args: { target: 'lxc:strong/101', action: 'pct_start', params: {}, reason: 'db is down' } }] },
			{ text: 'Starting db.' }
		);
		const turn = await runTurn({ sessionId, origin: 'chat' });
		expect(turn.status, JSON.stringify(turn)).toBe('complete');
		// The instructions name the rule in plain words; the tool result says it runs.
		const first = JSON.stringify(llm.requests[0].body);
		expect(first).toContain('Always-allow rules in force');
		expect(first).toContain('pct_start on any CT on host strong, any params');
		const toolResult = JSON.stringify((llm.requests[1].body as { messages: { role: string; content: unknown }[] }).messages.filter((m) => m.role === 'tool'));
		expect(toolResult).toContain('approved by rule');
		expect(toolResult).toContain('pct_start on any CT on host strong, any params');
		expect(toolResult).toContain('running');

		const [row] = await sql()<{ id: string }[]>`select id from executions where action = 'pct_start' and target = 'lxc:strong/101'`;
		const e = (await getExecution(sql(), row.id))!;
		expect(e.status).toBe('approved');
		expect(e.decision).toMatchObject({ decision: 'approved', route: `rule:${id}`, reason: 'pct_start on any CT on host strong, any params' });
		expect(await approvals(e.id)).toEqual([{ route: `rule:${id}`, reason: 'pct_start on any CT on host strong, any params', decidedBy: null }]);
		expect(await audits(e.id)).toEqual([
			expect.objectContaining({
				action: 'execution.approved',
				route: `rule:${id}`,
				actorName: 'root-admin',
				detail: expect.objectContaining({ ruleId: id, hash: e.hash })
			})
		]);

		// The Audit page's `rule` route filter finds it.
		expect((await listAudit(sql(), { route: 'rule' })).map((a) => a.subjectId)).toContain(e.id);
		expect((await listAudit(sql(), { route: `rule:${id}` })).map((a) => a.subjectId)).toEqual([e.id]);

		await runExecution(e.id);
		expect((await getExecution(sql(), e.id))!.status).toBe('succeeded');
		expect((await strong.containers()).find((c) => String(c.vmid) === '101')?.status).toBe('running');
		expect((await caller(admin).list()).find((r) => r.id === id)?.uses).toBe(1);
	});

	it('never covers a destructive action: refused when created, and ignored when matched', async () => {
		await expect(rule({ action: 'pct_destroy', pattern: 'lxc:strong/103' })).rejects.toThrow(/destructive/);
		// Even a row written behind the API's back does not approve one.
		await sql()`insert into allow_rules (action, pattern, created_by) values ('pct_destroy', 'lxc:strong/*', ${admin.id})`;
		const e = await request({ target: 'lxc:strong/103', action: 'pct_destroy' });
		expect(e.status).toBe('awaiting_approval');
		expect(await approvals(e.id)).toEqual([]);
	});

	it('checks constraints on the final params, defaults applied; a violation waits', async () => {
		await rule({
			action: 'pct_create',
			pattern: 'host:strong',
			constraints: [
				{ field: 'memory', op: 'lte', value: 4096 },
				{ field: 'memory', op: 'gte', value: 1024 }
			]
		});
		const big = await request({ target: 'strong', action: 'pct_create', params: { hostname: 'big', template: DEBIAN, memory: 8192 } });
		expect(big.status).toBe('awaiting_approval');
		// memory omitted: the default (512) is what would run, and it is below the rule's floor.
		const omitted = await request({ target: 'strong', action: 'pct_create', params: { hostname: 'small', template: DEBIAN } });
		expect(omitted.status).toBe('awaiting_approval');
		const fits = await request({ target: 'strong', action: 'pct_create', params: { hostname: 'fits', template: DEBIAN, memory: 2048 } });
		expect(fits.status).toBe('approved');
		// On another host the same request waits.
		const elsewhere = await request({ target: 'weak', action: 'pct_create', params: { hostname: 'fits2', template: DEBIAN, memory: 2048 } });
		expect(elsewhere.status).toBe('awaiting_approval');
	});

	it('an edit before approving stays the operator\u2019s approval', async () => {
		await rule({ action: 'pct_create', pattern: 'host:strong', constraints: [{ field: 'memory', op: 'lte', value: 4096 }] });
		const e = await request({ target: 'strong', action: 'pct_create', params: { hostname: 'edited', template: DEBIAN, memory: 8192 } });
		expect(e.status).toBe('awaiting_approval');
		const params = { ...e.params, memory: 2048 };
		const c = await checkEdit(e, params);
		if (!c.ok) throw new Error(c.error);
		expect(
			await approveEdited({ executionId: e.id, baseHash: e.hash, params, hash: c.hash, route: 'button', operator: admin, credential: freshSession() })
		).toMatchObject({ ok: true });
		expect(await approvals(e.id)).toEqual([expect.objectContaining({ route: 'button', decidedBy: admin.id })]);
	});

	it('a revoked rule approves nothing, also when revoked while a request is matching', async () => {
		const id = await rule({ action: 'pct_start', pattern: 'lxc:strong/101' });
		await caller(admin).revoke({ id });
		expect((await request({ target: 'lxc:strong/101', action: 'pct_start' })).status).toBe('awaiting_approval');

		// Revocation holds the row while the request matches: the request waits for it, then sees it revoked.
		const live = await rule({ action: 'pct_start', pattern: 'lxc:strong/101' });
		let release!: () => void;
		const gate = new Promise<void>((r) => (release = r));
		let locked!: () => void;
		const isLocked = new Promise<void>((r) => (locked = r));
		const revoking = sql().begin(async (tx) => {
			await revokeAllowRule(tx, live, admin.id);
			locked();
			await gate;
		});
		await isLocked;
		const pending = request({ target: 'lxc:strong/101', action: 'pct_start' });
		await waitForLockWaiter('%from allow_rules%for share%');
		release();
		await revoking;
		expect((await pending).status).toBe('awaiting_approval');
		await expect(caller(admin).revoke({ id: live })).rejects.toThrow(/already revoked/);

		// A rule that lapsed approves nothing either.
		const lapsing = await rule({ action: 'pct_start', pattern: 'lxc:strong/101', expiresInHours: 1 });
		await sql()`update allow_rules set expires_at = now() - interval '1 second' where id = ${lapsing}`;
		expect((await request({ target: 'lxc:strong/101', action: 'pct_start' })).status).toBe('awaiting_approval');
	});

	it('a hostname glob names CTs of its own host only, and patterns allow no tricks', async () => {
		await rule({ action: 'pct_start', pattern: 'lxc:strong/name=web-*' });
		expect((await request({ target: 'lxc:weak/200', action: 'pct_start' })).status).toBe('awaiting_approval');
		expect((await request({ target: 'lxc:strong/103', action: 'pct_start' })).status).toBe('awaiting_approval');
		expect((await request({ target: 'lxc:strong/104', action: 'pct_start' })).status).toBe('approved');

		for (const p of [
			'lxc:*/101',
			'host:*',
			'lxc:strong/../weak/*',
			'lxc:str\u043eng/*',
			'lxc:strong/name=web-*/..',
			'lxc:strong/*/x',
			'lxc:strong/101,200',
			'lxc:strong/name=Web.*',
			'lxc:/101'
		]) {
			expect(parsePattern(p), p).toBeNull();
			await expect(rule({ action: 'pct_start', pattern: p }), p).rejects.toThrow(/target pattern/);
		}
		await expect(rule({ action: 'pct_start', pattern: 'lxc:nowhere/*' })).rejects.toThrow(/unknown host/);
		await expect(rule({ action: 'pct_start', pattern: 'host:strong' })).rejects.toThrow(/runs on a container/);
		await expect(rule({ action: 'pct_create', pattern: 'host:strong', constraints: [{ field: 'bogus', op: 'eq', value: 1 }] })).rejects.toThrow(/not a param/);
		await expect(rule({ action: 'pct_create', pattern: 'host:strong', constraints: [{ field: 'hostname', op: 'lte', value: 3 }] })).rejects.toThrow(
			/only numbers/
		);
	});

	it('refuses every rule procedure to a non-admin', async () => {
		const id = await rule({ action: 'pct_start', pattern: 'lxc:strong/101' });
		const op = caller(plain);
		await expect(op.list()).rejects.toMatchObject({ code: 'FORBIDDEN' });
		await expect(op.create({ action: 'pct_start', pattern: 'lxc:strong/*' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		await expect(op.update({ id, rule: { action: 'pct_start', pattern: 'lxc:strong/*' } })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		await expect(op.revoke({ id })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from allow_rules where pattern = 'lxc:strong/*' and revoked_at is null`;
		expect(n).toBe(0);
	});
});
