import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type postgres from 'postgres';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

/** A token as Settings would make it (the Settings flow itself is api-tokens.spec.ts). */
async function token(sql: postgres.Sql, username: string, name: string, scope: 'read' | 'operate'): Promise<string> {
	const t = `nomos_pat_${randomBytes(32).toString('base64url')}`;
	await sql`insert into api_tokens (operator_id, name, scope, token_hash, hint)
		values ((select id from operators where username = ${username}), ${name}, ${scope}, ${createHash('sha256').update(t).digest('hex')}, ${t.slice(0, 14)})`;
	return t;
}

async function connect(baseURL: string, bearer: string | null): Promise<Client> {
	const client = new Client({ name: 'e2e', version: '1.0.0' });
	const headers: Record<string, string> = bearer ? { authorization: `Bearer ${bearer}` } : {};
	await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', baseURL), { requestInit: { headers } }));
	return client;
}

const textOf = (r: Awaited<ReturnType<Client['callTool']>>) => (r.content as { text: string }[])[0].text;

test('an MCP client reads the fleet and requests an execution that waits on Ops; approved, get_execution shows the result', async ({ page, env, sql }) => {
	const operate = await token(sql, env.admin.username, 'claude-desktop', 'operate');
	const client = await connect(env.baseURL, operate);
	const names = (await client.listTools()).tools.map((t) => t.name);
	expect(names).toEqual(expect.arrayContaining(['list_lxcs', 'get_lxc_state', 'get_state_snapshot', 'search_knowledge', 'get_execution', 'request_execution']));
	expect(textOf(await client.callTool({ name: 'list_lxcs', arguments: {} }))).toContain(env.proxmox.nodeName);

	const requested = await client.callTool({
		name: 'request_execution',
		arguments: {
			target: `lxc:${env.proxmox.nodeName}/100`,
			action: 'systemctl',
			params: { unit: 'cron', op: 'restart' },
			reason: 'asked over MCP by the e2e client'
		}
	});
	expect(requested.isError ?? false).toBe(false);
	const r = JSON.parse(textOf(requested)) as { executionId: string; status: string };
	expect(r.status).toBe('awaiting_approval');

	await login(page, env.admin);
	await page.goto('/ops');
	const card = page.getByTestId('ops-pending').getByTestId('execution-card').filter({ hasText: 'asked over MCP by the e2e client' });
	await expect(card).toHaveAttribute('data-status', 'awaiting_approval');
	await card.screenshot({ path: 'test-results/mcp-ops-card.png' });
	await card.getByTestId('approve').click();

	await expect
		.poll(async () => JSON.parse(textOf(await client.callTool({ name: 'get_execution', arguments: { id: r.executionId } }))).status, {
			timeout: scaled(30_000)
		})
		.toBe('succeeded');
	const done = JSON.parse(textOf(await client.callTool({ name: 'get_execution', arguments: { id: r.executionId } })));
	expect(done.decision).toMatchObject({ decision: 'approved', route: 'ops' });

	// The card's home: the token's MCP chat, in the sidebar.
	await expect(page.getByTestId('sidebar')).toContainText('MCP · claude-desktop');
	await page.getByTestId('sidebar').getByText('MCP · claude-desktop').click();
	await expect(page.getByText(`requested execution ${r.executionId}`)).toBeVisible();
	await expect(page.getByText(`execution ${r.executionId} (systemctl on lxc:${env.proxmox.nodeName}/100) succeeded`)).toBeVisible();
	await page.screenshot({ path: 'test-results/mcp-chat.png' });
	const [audit] = await sql<{ route: string }[]>`select route from audit_log where action = 'execution.requested' and subject_id = ${r.executionId}`;
	expect(audit.route).toBe('mcp');
	await client.close();
});

test('a request made while Ops loads is on it when it opens, marked as asked over MCP', async ({ page, env, sql }) => {
	const operate = await token(sql, env.admin.username, 'mid-load', 'operate');
	const client = await connect(env.baseURL, operate);
	const ask = async (unit: string, reason: string) => {
		const r = await client.callTool({
			name: 'request_execution',
			arguments: { target: `lxc:${env.proxmox.nodeName}/100`, action: 'systemctl', params: { unit, op: 'restart' }, reason }
		});
		expect(r.isError ?? false).toBe(false);
		return JSON.parse(textOf(r)) as { executionId: string };
	};
	await ask('nginx', 'asked before Ops opened');
	await login(page, env.admin);
	await expect(page.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');

	// Navigate to Ops, and hold its data once the server has read it: the page opens with that.
	let read!: () => void;
	const dataRead = new Promise<void>((r) => (read = r));
	let release!: () => void;
	const released = new Promise<void>((r) => (release = r));
	await page.route('**/ops/__data.json*', async (route) => {
		const response = await route.fetch();
		read();
		await released;
		await route.fulfill({ response });
	});
	await page.getByTestId('sidebar').getByRole('link', { name: 'Ops', exact: true }).click();
	await dataRead;
	const late = await ask('ssh', 'asked while Ops was loading');
	// A marker committed after it: once the sidebar shows it, the tab's fleet stream has handed
	// out the request's event too (in order), before the Ops page subscribed.
	const marker = `after the MCP request ${Date.now()}`;
	await sql.begin(async (tx) => {
		const [s] = await tx`insert into chat_sessions (title) values (${marker}) returning id`;
		await tx`insert into tasks (session_id) values (${s.id})`;
		await tx`insert into events (session_id, type, payload) values (${s.id}, 'session.updated', '{"created":true}'::jsonb)`;
	});
	await expect(page.getByTestId('session-link').filter({ hasText: marker })).toBeVisible();
	release();

	const pending = page.getByTestId('ops-pending');
	await expect(pending.getByTestId('execution-card').filter({ hasText: 'asked before Ops opened' })).toBeVisible();
	const card = pending.locator(`[data-execution-id="${late.executionId}"]`);
	await expect(card).toHaveAttribute('data-status', 'awaiting_approval');
	await expect(card.getByTestId('requested-via')).toHaveText('via MCP · mid-load');
	await card.screenshot({ path: 'test-results/mcp-ops-card-via.png' });
	await page.unroute('**/ops/__data.json*');
	// Leave nothing waiting on Ops for the specs after this one.
	for (const reason of ['asked before Ops opened', 'asked while Ops was loading']) {
		const c = pending.getByTestId('execution-card').filter({ hasText: reason });
		await c.getByTestId('deny').click();
		await c.getByTestId('confirm-deny').click();
		await expect(c).toHaveCount(0);
	}
	await client.close();
});

test('MCP without a token is 401; a read token gets no request_execution', async ({ env, sql }) => {
	const raw = await fetch(`${env.baseURL}/mcp`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
		body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
	});
	expect(raw.status).toBe(401);
	await expect(connect(env.baseURL, null)).rejects.toMatchObject({ code: 401 });

	const read = await token(sql, env.operator.username, 'viewer', 'read');
	const client = await connect(env.baseURL, read);
	const names = (await client.listTools()).tools.map((t) => t.name);
	expect(names).toContain('list_lxcs');
	expect(names).not.toContain('request_execution');
	const refused = await client.callTool({
		name: 'request_execution',
		arguments: { target: `lxc:${env.proxmox.nodeName}/100`, action: 'pct_stop', params: {}, reason: 'no' }
	});
	expect(refused.isError).toBe(true);
	expect(textOf(refused)).toContain('scope operate');
	await client.close();
});
