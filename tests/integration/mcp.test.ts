// Nomos as an MCP server, driven by the SDK's own Client and StreamableHTTPClientTransport. Its
// fetch goes through the app's request guard (what hooks.server.ts runs) into the /mcp route, in
// process, with real Postgres and the SSH Proxmox double: tools listed and read, a request waits
// for an approval in the token's MCP chat (audited with route mcp), runs once approved and
// get_execution reads the result; no token is 401; a read token never gets request_execution;
// the token never approves its own request (issue #28), and a rebinding Host or Origin is refused.
import type { RequestEvent } from '@sveltejs/kit';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertApiToken } from '../../src/lib/server/db/queries/api-tokens';
import { createOperator } from '../../src/lib/server/auth/accounts';
import { guardRequest } from '../../src/lib/server/auth/request-guard';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { runExecution } from '../../src/lib/server/executions/runner';
import { POST } from '../../src/routes/mcp/+server';
import { prepareExecution } from '../../src/lib/server/executions/prepare';
import { decidePlan, insertPlan } from '../../src/lib/server/db/queries/plans';
import { allowRulesRouter } from '../../src/lib/server/trpc/routers/allow-rules';
import { appRouter } from '../../src/lib/server/trpc/router';
import { authenticate } from '../../src/lib/server/auth/session';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { resetEnvCache } from '../../src/lib/server/env';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { decide } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const URL_MCP = 'http://127.0.0.1:3000/mcp';
const { pve } = useStage({
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'stopped' },
				{ vmid: 101, hostname: 'db', status: 'running' }
			]
		}
	]
});
let alice: { id: string };
let operate: { token: string; id: string };
let read: { token: string };

/** The app in process: the guard (hooks.server.ts), then the /mcp route's POST handler. */
async function appFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
	const request = new Request(input, init);
	const url = new URL(request.url);
	const g = await guardRequest(request, url);
	if (g.kind === 'refuse') return Response.json(g.body, { status: g.status });
	if (g.kind === 'sign-in') return new Response(null, { status: 303 });
	if (request.method !== 'POST') return new Response(null, { status: 405 });
	const locals = { user: g.auth.user, sessionToken: g.auth.sessionToken, apiToken: g.auth.apiToken ?? null };
	return POST({ request, url, locals } as unknown as RequestEvent<Record<string, never>, '/mcp'>);
}

async function connect(token: string | null): Promise<Client> {
	const client = new Client({ name: 'nomos-test', version: '1.0.0' });
	const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
	await client.connect(new StreamableHTTPClientTransport(new URL(URL_MCP), { fetch: appFetch, requestInit: { headers } }));
	return client;
}

const body = (r: Awaited<ReturnType<Client['callTool']>>) => {
	const first = (r.content as { type: string; text: string }[])[0];
	return {
		isError: r.isError ?? false,
		text: first.text,
		json: (() => {
			try {
				return JSON.parse(first.text) as Record<string, unknown>;
			} catch {
				return null;
			}
		})()
	};
};

beforeAll(async () => {
	alice = await createOperator(sql(), 'alice', 'a-long-enough-password', 'operator');
	const o = await insertApiToken(sql(), alice.id, { name: 'claude', scope: 'operate', days: 30 });
	operate = { token: o.token, id: o.listing.id };
	read = { token: (await insertApiToken(sql(), alice.id, { name: 'viewer', scope: 'read', days: null })).token };
});

describe('MCP at /mcp', () => {
	it('without a token: 401 (also for a wrong one), and the client cannot connect', async () => {
		const init = {
			jsonrpc: '2.0',
			id: 1,
			method: 'initialize',
			params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } }
		};
		for (const headers of [{}, { authorization: 'Bearer nomos_pat_wrong' }, { authorization: 'Basic abc' }] as Record<string, string>[]) {
			const r = await appFetch(URL_MCP, {
				method: 'POST',
				headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
				body: JSON.stringify(init)
			});
			expect(r.status).toBe(401);
		}
		await expect(connect(null)).rejects.toMatchObject({ code: 401 });
	});

	it('lists the fleet read tools and answers them from the agent’s implementations', async () => {
		const client = await connect(operate.token);
		const names = (await client.listTools()).tools.map((t) => t.name).sort();
		expect(names).toEqual([
			'get_entity',
			'get_execution',
			'get_lxc_state',
			'get_state_snapshot',
			'list_entities',
			'list_lxcs',
			'request_execution',
			'search_knowledge'
		]);
		const tools = (await client.listTools()).tools;
		const req = tools.find((t) => t.name === 'request_execution')!;
		// The catalogue is one signature per action in the description (the schema keeps params open; the server checks them).
		expect(req.description).toMatch(/pct_start\(/);
		expect(req.description).toMatch(/pct_push\(path, content/);

		const lxcs = body(await client.callTool({ name: 'list_lxcs', arguments: {} }));
		expect(lxcs.isError).toBe(false);
		expect(lxcs.text).toContain('caddy');
		expect(lxcs.text).toContain('db');
		const bad = body(await client.callTool({ name: 'list_lxcs', arguments: { host: 42 } }));
		expect(bad).toMatchObject({ isError: true });
		expect(bad.text).toContain('host:');
		expect(body(await client.callTool({ name: 'http_get', arguments: { url: 'http://127.0.0.1/' } }))).toMatchObject({
			isError: true,
			text: 'unknown tool http_get'
		});
		await client.close();
	});

	it('request_execution waits for an approval in the token’s MCP chat; approved it runs and get_execution reads it', async () => {
		const client = await connect(operate.token);
		const r = body(
			await client.callTool({
				name: 'request_execution',
				arguments: { target: 'lxc:strong/100', action: 'pct_start', params: {}, reason: 'start caddy for the MCP test' }
			})
		);
		expect(r.isError).toBe(false);
		expect(r.json).toMatchObject({ status: 'awaiting_approval', action: 'pct_start', target: 'lxc:strong/100' });
		expect(String(r.json!.message)).toContain('get_execution');
		const id = String(r.json!.executionId);

		// Its home: one chat per token, owned by the token's operator, linked like the agent's requests.
		const [home] = await sql()<{ id: string; title: string; operatorId: string; status: string }[]>`
			select s.id, s.title, s.operator_id as "operatorId", e.status from executions e join chat_sessions s on s.id = e.requested_by_session where e.id = ${id}`;
		expect(home).toMatchObject({ title: 'MCP · claude', operatorId: alice.id, status: 'awaiting_approval' });
		expect(await sql()`select 1 from execution_sessions where execution_id = ${id} and session_id = ${home.id}`).toHaveLength(1);
		const [audit] = await sql()<{ route: string; actorName: string; detail: Record<string, unknown> }[]>`
			select route, actor_name as "actorName", detail from audit_log where action = 'execution.requested' and subject_id = ${id}`;
		expect(audit).toMatchObject({
			route: 'mcp',
			actorName: 'alice',
			detail: { action: 'pct_start', target: 'lxc:strong/100', token: { id: operate.id, name: 'claude' } }
		});

		const [note] = await sql()<{ parts: unknown }[]>`select parts from messages where session_id = ${home.id} and role = 'system'`;
		expect(JSON.stringify(note.parts)).toContain(`alice's MCP client (token “claude”) requested execution ${id}: pct_start on lxc:strong/100`);

		const pending = body(await client.callTool({ name: 'get_execution', arguments: { id } }));
		expect(pending.json).toMatchObject({ id, status: 'awaiting_approval' });

		// A second request lands in the same chat.
		const again = body(
			await client.callTool({ name: 'request_execution', arguments: { target: 'lxc:strong/101', action: 'pct_stop', params: {}, reason: 'second' } })
		);
		const [second] = await sql()<{ s: string }[]>`select requested_by_session as s from executions where id = ${String(again.json!.executionId)}`;
		expect(second.s).toBe(home.id);

		expect((await decide(id, alice.id, 'approved')).ok).toBe(true);
		// No "Nomos continues by itself" window there: nothing will continue.
		expect(await sql()`select 1 from assent_windows where session_id = ${home.id}`).toHaveLength(0);
		await runExecution(id);
		const done = body(await client.callTool({ name: 'get_execution', arguments: { id } }));
		expect(done.json).toMatchObject({ id, status: 'succeeded', decision: { decision: 'approved' } });
		// The result re-invokes no agent in the MCP chat (no model is configured here): a note only.
		expect(await continueSession(home.id)).toBe('mcp');
		const notes = await sql()<{ parts: unknown }[]>`select parts from messages where session_id = ${home.id}`;
		expect(JSON.stringify(notes)).toContain('requested over MCP');
		await client.close();
	});

	it('nothing runs by itself except an always-allow rule (same matcher): an approved plan in the MCP chat approves nothing', async () => {
		const client = await connect(operate.token);
		const args = { target: 'lxc:strong/101', action: 'systemctl', params: { unit: 'cron', op: 'restart' }, reason: 'restart cron' };
		const [{ id: homeId }] = await sql()<{ id: string }[]>`select id from chat_sessions where mcp_token_id = ${operate.id}`;
		// Someone had the agent in that chat propose and approve this very step: not for MCP requests.
		const prepared = await prepareExecution(args);
		if ('error' in prepared) throw new Error(prepared.error);
		const plan = await sql().begin((tx) => insertPlan(tx, homeId, 'restart cron', [{ ...prepared, why: 'x' }]));
		await sql().begin((tx) => decidePlan(tx, plan.id, 'approved', alice.id, 1));
		const waits = body(await client.callTool({ name: 'request_execution', arguments: args }));
		expect(waits.json).toMatchObject({ status: 'awaiting_approval' });

		const admin = await createOperator(sql(), 'root-admin', 'a-long-enough-password', 'admin');
		const rules = createCallerFactory(allowRulesRouter)({ user: { id: admin.id, username: 'root-admin', role: 'admin' }, event: {} as RequestEvent });
		const rule = await rules.create({ action: 'systemctl', pattern: 'lxc:strong/*', constraints: [], note: '' });
		const runs = body(await client.callTool({ name: 'request_execution', arguments: args }));
		expect(runs.json).toMatchObject({ status: 'queued' });
		expect(String(runs.json!.message)).toContain('approved by rule');
		const [approval] = await sql()<{ route: string }[]>`select route from approvals where execution_id = ${String(runs.json!.executionId)}`;
		expect(approval.route).toBe(`rule:${rule.id}`);
		await rules.revoke({ id: rule.id });
		await client.close();
	});

	it('issue #28: the token that asked over MCP cannot approve it, whatever route it claims; no token approves a destroy', async () => {
		const client = await connect(operate.token);
		const ask = async (args: Record<string, unknown>) => String(body(await client.callTool({ name: 'request_execution', arguments: args })).json!.executionId);
		// Stopped while it is asked for: a running one would be refused before approval (before-approval.test.ts), whoever approves.
		const was = (await pve.containers()).find((c) => c.vmid === 100)!.status;
		await pve.patchCt(100, { status: 'stopped' });
		const destroy = await ask({ target: 'lxc:strong/100', action: 'pct_destroy', params: {}, reason: 'the MCP client wants it gone' });
		await pve.patchCt(100, { status: was });
		// The attack as reported: POST /trpc/executions.decide with the same Bearer token, claiming route "button".
		const asToken = async (token: string) => {
			const auth = await authenticate(null, `Bearer ${token}`);
			const event = {
				url: new URL('http://127.0.0.1:3000/trpc/executions.decide'),
				request: new Request('http://127.0.0.1:3000/trpc/executions.decide'),
				locals: { sessionToken: null }
			};
			return createCallerFactory(appRouter)({ user: auth.user, apiToken: auth.apiToken, event: event as unknown as RequestEvent });
		};
		const claim = { executionId: destroy, decision: 'approved', route: 'button' } as { executionId: string; decision: 'approved' };
		await expect((await asToken(operate.token)).executions.decide(claim)).rejects.toMatchObject({ code: 'FORBIDDEN' });
		// A token with scope approve does not either: a destroy needs a person.
		await sql()`update api_tokens set scope = 'approve' where id = ${operate.id}`;
		await expect((await asToken(operate.token)).executions.decide(claim)).rejects.toMatchObject({
			code: 'FORBIDDEN',
			message: expect.stringContaining('needs a person')
		});
		// Nor its own harmless request, by any route.
		const start = await ask({ target: 'lxc:strong/101', action: 'systemctl', params: { unit: 'cron', op: 'reload' }, reason: 'reload cron' });
		await expect((await asToken(operate.token)).executions.decide({ executionId: start, decision: 'approved' })).rejects.toMatchObject({
			code: 'FORBIDDEN',
			message: expect.stringContaining('own request')
		});
		await expect((await asToken(operate.token)).executions.decidePlan({ planId: crypto.randomUUID(), decision: 'approved' })).rejects.toMatchObject({
			code: 'CONFLICT'
		});
		expect((await getExecution(sql(), destroy))!.status).toBe('awaiting_approval');
		expect((await getExecution(sql(), start))!.status).toBe('awaiting_approval');
		expect(await sql()`select 1 from approvals where execution_id in (${destroy}, ${start})`).toHaveLength(0);
		expect(await sql()`select 1 from audit_log where action = 'execution.approved' and subject_id in (${destroy}, ${start})`).toHaveLength(0);
		// Another approve token of the same operator may approve the harmless one; the trail says rest and names it.
		const other = await insertApiToken(sql(), alice.id, { name: 'phone', scope: 'approve', days: 7 });
		expect(await (await asToken(other.token)).executions.decide({ executionId: start, decision: 'approved' })).toMatchObject({ status: 'approved' });
		const [a] = await sql()<
			{ route: string; detail: Record<string, unknown> }[]
		>`select route, detail from audit_log where action = 'execution.approved' and subject_id = ${start}`;
		expect(a).toMatchObject({ route: 'rest', detail: { token: { id: other.listing.id, name: 'phone' } } });
		// Denying runs nothing: the asking token may withdraw its own request.
		expect(await (await asToken(operate.token)).executions.decide({ executionId: destroy, decision: 'denied' })).toMatchObject({ status: 'denied' });
		await sql()`update api_tokens set scope = 'operate' where id = ${operate.id}`;
		await client.close();
	});

	it('DNS rebinding: Host or Origin other than loopback or ORIGIN is refused (421/403) even with a valid token', async () => {
		const init = {
			jsonrpc: '2.0',
			id: 1,
			method: 'initialize',
			params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } }
		};
		const post = (headers: Record<string, string>) =>
			appFetch(URL_MCP, {
				method: 'POST',
				headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${operate.token}`, ...headers },
				body: JSON.stringify(init)
			});
		expect((await post({ host: 'evil.com' })).status).toBe(421);
		expect((await post({ host: 'evil.com:3000' })).status).toBe(421);
		expect((await post({ host: '127.0.0.1:3000', origin: 'http://evil.com' })).status).toBe(403);
		expect((await post({ host: '127.0.0.1:3000', origin: 'null' })).status).toBe(403);
		expect((await post({ host: 'localhost:3000' })).status).toBe(200);
		expect((await post({ host: '127.0.0.1:3000', origin: 'http://localhost:5173' })).status).toBe(200);
		// With a public origin configured, its host is served too (and only it, besides loopback).
		process.env.ORIGIN = 'https://nomos.example.net';
		resetEnvCache();
		try {
			expect((await post({ host: 'nomos.example.net', origin: 'https://nomos.example.net' })).status).toBe(200);
			expect((await post({ host: 'nomos.example.net', origin: 'https://evil.example.net' })).status).toBe(403);
			expect((await post({ host: 'other.example.net' })).status).toBe(421);
		} finally {
			delete process.env.ORIGIN;
			resetEnvCache();
		}
	});

	it('a read token lists and calls read tools only: request_execution is refused and writes nothing', async () => {
		const client = await connect(read.token);
		const names = (await client.listTools()).tools.map((t) => t.name);
		expect(names).toContain('list_lxcs');
		expect(names).not.toContain('request_execution');
		expect(body(await client.callTool({ name: 'list_lxcs', arguments: {} })).isError).toBe(false);
		const [{ n: before }] = await sql()<{ n: number }[]>`select count(*)::int as n from executions`;
		const refused = body(
			await client.callTool({ name: 'request_execution', arguments: { target: 'lxc:strong/100', action: 'pct_stop', params: {}, reason: 'nope' } })
		);
		expect(refused.isError).toBe(true);
		expect(refused.text).toContain('scope operate');
		const [{ n: after }] = await sql()<{ n: number }[]>`select count(*)::int as n from executions`;
		expect(after).toBe(before);
		await client.close();
	});
});
