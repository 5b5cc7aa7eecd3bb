// Issue #28 in the browser and over real HTTP: an MCP client's token cannot approve its own
// request (whatever route it claims); approving what cannot be undone from a session that gave its
// password long ago opens the password dialog on the card, and the approval goes through once it
// is given; minting a token asks for the password; /mcp refuses a rebinding Host.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type postgres from 'postgres';
import type { Page } from '@playwright/test';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

async function token(sql: postgres.Sql, username: string, name: string, scope: 'read' | 'operate' | 'approve'): Promise<string> {
	const t = `nomos_pat_${randomBytes(32).toString('base64url')}`;
	await sql`insert into api_tokens (operator_id, name, scope, token_hash, hint, expires_at)
		values ((select id from operators where username = ${username}), ${name}, ${scope}, ${createHash('sha256').update(t).digest('hex')}, ${t.slice(0, 14)}, now() + interval '1 day')`;
	return t;
}

/** One JSON-RPC call to /mcp, as any MCP client sends it; `host` overrides the Host header. */
function mcpCall(baseURL: string, bearer: string, body: unknown, host?: string): Promise<{ status: number; text: string }> {
	const u = new URL('/mcp', baseURL);
	return new Promise((resolve, reject) => {
		const req = http.request(
			{
				hostname: u.hostname,
				port: u.port,
				path: u.pathname,
				method: 'POST',
				headers: { host: host ?? u.host, authorization: `Bearer ${bearer}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
			},
			(res) => {
				let text = '';
				res.on('data', (c: Buffer) => (text += c.toString('utf8')));
				res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
			}
		);
		req.on('error', reject);
		req.end(JSON.stringify(body));
	});
}

async function requestOverMcp(baseURL: string, bearer: string, args: Record<string, unknown>): Promise<string> {
	const r = await mcpCall(baseURL, bearer, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'request_execution', arguments: args } });
	expect(r.status).toBe(200);
	const out = JSON.parse(r.text) as { result: { content: { text: string }[] } };
	return (JSON.parse(out.result.content[0].text) as { executionId: string }).executionId;
}

/** Makes the signed-in session of this page look like it gave its password `minutes` ago. */
async function ageSession(page: Page, sql: postgres.Sql, minutes: number) {
	const cookie = (await page.context().cookies()).find((c) => c.name === 'nomos_session')!;
	const hash = createHash('sha256').update(cookie.value).digest('hex');
	await sql`update auth_sessions set verified_at = now() - make_interval(mins => ${minutes}) where token_hash = ${hash}`;
}

test('the MCP client’s own token cannot approve its destroy (claiming route button); a rebinding Host is refused', async ({ env, sql }) => {
	const bearer = await token(sql, env.admin.username, 'self-approver', 'approve');
	// Stopped while it is asked for (executions.spec starts it): a running one is refused before approval, whoever approves.
	const { patchCtIn, readContainers } = await import('../doubles/proxmox/state');
	const was = (await readContainers(env.proxmox.stateDir)).find((c) => c.vmid === 102)?.status ?? 'stopped';
	await patchCtIn(env.proxmox.stateDir, 102, { status: 'stopped' });
	const id = await requestOverMcp(env.baseURL, bearer, {
		target: `lxc:${env.proxmox.nodeName}/102`,
		action: 'pct_destroy',
		params: {},
		reason: 'the client wants it gone'
	}).finally(() => patchCtIn(env.proxmox.stateDir, 102, { status: was }));
	const res = await fetch(`${env.baseURL}/trpc/executions.decide`, {
		method: 'POST',
		headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
		body: JSON.stringify({ executionId: id, decision: 'approved', route: 'button' })
	});
	expect(res.status).toBe(403);
	const [row] = await sql<{ status: string }[]>`select status from executions where id = ${id}`;
	expect(row.status).toBe('awaiting_approval');
	expect(await sql`select 1 from approvals where execution_id = ${id}`).toHaveLength(0);
	// The same token, the same request, but the Host a rebinding page would send.
	const init = {
		jsonrpc: '2.0',
		id: 1,
		method: 'initialize',
		params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } }
	};
	expect((await mcpCall(env.baseURL, bearer, init, 'evil.com')).status).toBe(421);
	expect((await mcpCall(env.baseURL, bearer, init)).status).toBe(200);
	// Leave nothing waiting for the specs after this one.
	const deny = await fetch(`${env.baseURL}/trpc/executions.decide`, {
		method: 'POST',
		headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
		body: JSON.stringify({ executionId: id, decision: 'denied' })
	});
	expect(deny.status).toBe(200);
});

for (const viewport of [
	{ name: 'desktop', width: 1280, height: 800 },
	{ name: 'phone', width: 390, height: 844 }
]) {
	test(`step-up on the card (${viewport.name}): an irreversible approval from a stale session asks for the password, then goes through`, async ({
		page,
		env,
		sql
	}) => {
		const bearer = await token(sql, env.admin.username, `asker-${viewport.name}`, 'operate');
		// Deleting a snapshot that is not there: irreversible in kind, harmless here (it fails on the host).
		const id = await requestOverMcp(env.baseURL, bearer, {
			target: `lxc:${env.proxmox.nodeName}/101`,
			action: 'pct_delsnapshot',
			params: { name: `gone-${viewport.name}` },
			reason: `step-up ${viewport.name}`
		});
		await login(page, env.admin);
		// Signed in on the desktop layout (the sign-in helper waits for the sidebar), then the phone's.
		await page.setViewportSize(viewport);
		await ageSession(page, sql, 11);
		await page.goto('/ops');
		const card = page.locator(`[data-execution-id="${id}"]`);
		await card.getByTestId('approve').click();
		const dialog = page.getByTestId('step-up-dialog');
		await expect(dialog).toBeVisible();
		await expect(dialog).toContainText('pct_delsnapshot');
		await expect(card).toHaveAttribute('data-status', 'awaiting_approval');
		await dialog.getByTestId('step-up-password').fill('not the password');
		await dialog.getByTestId('step-up-confirm').click();
		await expect(dialog.getByTestId('step-up-error')).toContainText('Wrong password');
		await page.screenshot({ path: `test-results/step-up-${viewport.name}.png` });
		await dialog.getByTestId('step-up-password').fill(env.admin.password);
		await dialog.getByTestId('step-up-confirm').click();
		await expect(dialog).toBeHidden();
		await expect
			.poll(async () => (await sql<{ status: string }[]>`select status from executions where id = ${id}`)[0].status, { timeout: scaled(30_000) })
			.not.toBe('awaiting_approval');
		const [a] = await sql<{ route: string }[]>`select route from audit_log where action = 'execution.approved' and subject_id = ${id}`;
		expect(a.route).toBe('ops');
		expect(await sql`select 1 from audit_log where action = 'operator.step_up' and at > now() - interval '1 minute'`).not.toHaveLength(0);
		await sql`delete from login_throttle`;
	});
}

test('minting a token asks for the password; a wrong one mints nothing', async ({ page, env, sql }) => {
	await login(page, env.admin);
	await page.goto('/settings');
	const section = page.getByTestId('api-tokens-section');
	await section.getByTestId('token-name').fill('needs-password');
	await section.getByTestId('token-password').fill('wrong password');
	await section.getByTestId('token-create').click();
	await expect(section.getByTestId('token-status')).toContainText('Wrong password');
	await expect(section.getByTestId('token-row').filter({ hasText: 'needs-password' })).toHaveCount(0);
	await expect(section.getByTestId('token-expiry').locator('option')).toHaveText(['in 7 days', 'in 30 days', 'in 90 days', 'in 365 days']);
	await section.getByTestId('token-password').fill(env.admin.password);
	await section.getByTestId('token-create').click();
	await expect(section.getByTestId('token-created')).toContainText('needs-password');
	await section.screenshot({ path: 'test-results/api-tokens-password.png' });
	await section.getByTestId('token-row').filter({ hasText: 'needs-password' }).getByTestId('token-revoke').click();
	await expect(section.getByTestId('token-row').filter({ hasText: 'needs-password' })).toHaveCount(0);
	await sql`delete from login_throttle`;
});
