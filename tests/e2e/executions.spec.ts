import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import type { Page } from '@playwright/test';
import { scaled } from '../helpers/time';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

async function startChat(page: Page, text: string) {
	await page.getByTestId('composer-input').fill(text);
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
}

const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

test('deploy an app from one message and one plan approval: the plan runs itself, read-only health step included; the agent reports once', async ({
	page,
	env,
	sql
}) => {
	const { setHttpIn } = await import('../doubles/proxmox/state');
	const llm = llmControl(env.llmURL);
	const create = { vmid: '105', hostname: 'typetype', template: TEMPLATE, cores: 2, memory: 2048, disk: 8, storage: 'local-lvm', features: { nesting: true } };
	const unit = '[Unit]\nDescription=TypeType\n\n[Service]\nExecStart=/usr/bin/node /opt/typetype/server.js\n\n[Install]\nWantedBy=multi-user.target\n';
	const steps = [
		{ action: 'pct_create', target: 'strong', params: create, why: 'a Debian 12 CT for TypeType' },
		{ action: 'pct_push', target: 'strong/105', params: { path: '/etc/systemd/system/typetype.service', content: unit }, why: 'its unit' },
		{ action: 'systemctl', target: 'strong/105', params: { unit: 'typetype.service', op: 'start' }, why: 'start it' },
		{ action: 'ct_http_check', target: 'strong/105', params: { port: 8080, path: '/healthz' }, why: 'make sure it answers' }
	];
	await setHttpIn(env.proxmox.stateDir, 105, 8080, { paths: { '/healthz': { body: 'ok' } } });
	await llm.push(
		{ text: 'Here is the plan.', toolCalls: [{ name: 'propose_plan', args: { title: 'Deploy TypeType on strong', steps } }] },
		// Nothing between the steps: the next request is the one summary turn, after the plan has ended.
		{ toolCalls: [{ name: 'list_lxcs', args: {} }] },
		{ text: 'TypeType is deployed: CT 105 `typetype` is **running** on strong and /healthz answers ok.' }
	);
	await login(page, env.admin);
	await startChat(page, 'deploy TypeType on strong as an LXC and make sure it works');

	const plan = page.getByTestId('plan-card');
	await expect(plan).toContainText('Deploy TypeType on strong');
	await expect(plan.getByTestId('plan-step')).toHaveCount(4);
	await expect(plan.getByTestId('plan-step').first()).toContainText(
		"'pct' 'create' '105' 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst' '--hostname' 'typetype'"
	);
	await expect(plan.getByTestId('plan-step').last()).toContainText('check');
	await page.getByTestId('approve-plan').click();
	await expect(page.getByTestId('assent-window')).toBeVisible();

	// One card shows the plan's progress, live, to its end.
	await expect(plan).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(60_000) });
	for (const step of await plan.getByTestId('plan-step').all()) await expect(step).toHaveAttribute('data-state', 'succeeded');
	await expect(page.getByTestId('stop-plan')).toHaveCount(0);

	const last = page.locator('[data-testid="message"][data-role="assistant"]').last();
	await expect(last).toContainText('TypeType is deployed', { timeout: scaled(30_000) });
	await expect(last).toHaveAttribute('data-origin', 'plan');
	await expect(page.getByTestId('system-note').filter({ hasText: 'ran to the end' })).toHaveCount(1);
	await page.setViewportSize({ width: 1280, height: 900 });
	await plan.scrollIntoViewIfNeeded();
	await plan.screenshot({ path: 'test-results/plan-card-1280.png' });
	await page.setViewportSize({ width: 390, height: 844 });
	await plan.scrollIntoViewIfNeeded();
	await plan.screenshot({ path: 'test-results/plan-card-390.png' });
	await page.setViewportSize({ width: 1280, height: 900 });

	// One message, one approval, three model requests in all: propose, then look and report.
	const sessionId = page.url().split('/').pop()!;
	const users = await sql`select count(*)::int as n from messages where session_id = ${sessionId} and role = 'user'`;
	expect(users[0].n).toBe(1);
	const reqs = await llm.requests();
	expect(reqs).toHaveLength(3);
	const summary = JSON.stringify(reqs[1].body);
	expect(summary).toContain('ran to the end: every step succeeded');
	expect(summary).toContain('(ct_http_check on lxc:strong/105) succeeded');
	console.log(`[e2e deploy] model requests: ${reqs.length} (1 message, 1 plan approval, 0 continue)`);

	// Ops shows the same card.
	await page.goto('/ops');
	await expect(page.getByTestId('ops-plans').getByTestId('plan-card').first()).toContainText('Deploy TypeType on strong');
	await page.getByTestId('ops-plans').screenshot({ path: 'test-results/plan-card-ops-1280.png' });
	// The inventory refreshes after the create (a sync that started before it may land first).
	await expect
		.poll(async () => [...(await sql`select name, attributes->>'status' as status from entities where kind = 'lxc' and external_id = 'strong/105'`)], {
			timeout: scaled(20_000)
		})
		.toEqual([{ name: 'typetype', status: 'running' }]);
});

test('inline Approve in the bubble runs exactly the shown command', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{ toolCalls: [{ name: 'request_execution', args: { target: 'lxc:strong/102', action: 'pct_start', params: {}, reason: 'backup must run tonight' } }] },
		{ text: 'Waiting for your approval to start backup.' },
		{ text: 'backup (CT 102) is running now.' }
	);
	await login(page, env.admin);
	await startChat(page, 'start the backup container');
	const card = page.getByTestId('execution-card');
	await expect(card.getByTestId('command-preview')).toHaveText("'pct' 'start' '102'");
	await expect(card.getByTestId('classification')).toHaveText('config mutation');
	await expect(card.getByTestId('execution-reason')).toHaveText('backup must run tonight');
	await card.getByTestId('approve').click();
	await expect(card).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(card.getByTestId('decision')).toContainText('approved by admin via button');
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('backup (CT 102) is running now.');
});

test('approve on the Ops page; deny with a reason the agent receives', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{ toolCalls: [{ name: 'request_execution', args: { target: 'lxc:strong/102', action: 'pct_stop', params: {}, reason: 'maintenance' } }] },
		{ text: 'Asked to stop backup.' },
		{ text: 'backup is stopped.' }
	);
	await login(page, env.admin);
	await startChat(page, 'stop backup');
	await expect(page.getByTestId('execution-card')).toHaveAttribute('data-status', 'awaiting_approval');
	const chatUrl = page.url();
	const id = await page.getByTestId('execution-card').getAttribute('data-execution-id');

	// Other specs of the run may leave cards pending there: this one is found by its id.
	await page.goto('/ops');
	const pending = page.getByTestId('ops-pending').locator(`[data-testid="execution-card"][data-execution-id="${id}"]`);
	await expect(pending).toHaveCount(1);
	await pending.getByTestId('approve').click();
	await expect(page.getByTestId('ops-recent').getByTestId('execution-card').first()).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });

	await page.goto(chatUrl);
	await expect(page.getByTestId('execution-card').getByTestId('decision')).toContainText('via ops');

	// Now a destroy, denied with a reason.
	await llm.push(
		{ toolCalls: [{ name: 'request_execution', args: { target: 'lxc:strong/102', action: 'pct_destroy', params: {}, reason: 'no longer needed' } }] },
		{ text: 'Waiting for approval.' },
		{ text: 'Understood, backup stays.' }
	);
	await page.getByTestId('composer-input').fill('and destroy it');
	await page.getByTestId('send').click();
	const destroy = page.getByTestId('execution-card').last();
	await expect(destroy.getByTestId('classification')).toHaveText('destructive');
	await destroy.getByTestId('deny').click();
	const reason = destroy.getByLabel('Reason for denying');
	await expect(reason).toHaveAttribute('data-testid', 'deny-reason');
	await reason.fill('keep it, it holds the old backups');
	await destroy.getByTestId('confirm-deny').click();
	await expect(destroy).toHaveAttribute('data-status', 'denied');
	await expect(page.getByTestId('system-note').last()).toContainText('keep it, it holds the old backups');
	const sessionId = chatUrl.split('/').pop()!;
	const [{ n }] =
		await sql`select count(*)::int as n from executions where requested_by_session = ${sessionId} and action = 'pct_destroy' and status = 'denied'`;
	expect(n).toBe(1);
	// The window is still open from the earlier approval, so the agent hears about the denial by itself.
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('Understood, backup stays.');
	const reqs = await llm.requests();
	expect(JSON.stringify(reqs.at(-1)!.body)).toContain('keep it, it holds the old backups');
});

test('typing "go ahead" approves what is pending; the turn is told', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{ toolCalls: [{ name: 'request_execution', args: { target: 'lxc:strong/102', action: 'pct_start', params: {}, reason: 'start again' } }] },
		{ text: 'Say the word and I will start it.' },
		{ text: 'Starting it as you said.' },
		{ text: 'backup is up.' }
	);
	await login(page, env.admin);
	await startChat(page, 'start backup again');
	await expect(page.getByTestId('execution-card')).toHaveAttribute('data-status', 'awaiting_approval');
	await page.getByTestId('composer-input').fill('go ahead');
	await page.getByTestId('send').click();
	const card = page.getByTestId('execution-card');
	await expect(card).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(card.getByTestId('decision')).toContainText('via chat');
	await expect(page.getByTestId('system-note').filter({ hasText: 'by typing "go ahead"' })).toBeVisible();
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('backup is up.');
});

test('a plan that destroys a running CT is refused in the turn; the agent proposes stop then destroy, one approval runs both', async ({ page, env, sql }) => {
	const { writeSeed } = await import('../doubles/proxmox/state');
	await writeSeed(env.proxmox.stateDir, [{ vmid: 110, hostname: 'scratch', status: 'running', cores: 1, memory: 256 }]);
	const llm = llmControl(env.llmURL);
	const target = 'lxc:strong/110';
	await llm.push(
		{ toolCalls: [{ name: 'propose_plan', args: { title: 'Remove scratch', steps: [{ action: 'pct_destroy', target, why: 'remove it' }] } }] },
		{
			toolCalls: [
				{
					name: 'propose_plan',
					args: {
						title: 'Remove scratch',
						steps: [
							{ action: 'pct_stop', target, why: 'it runs: stop it first' },
							{ action: 'pct_destroy', target, why: 'then remove it' }
						]
					}
				}
			]
		},
		{ toolCalls: [{ name: 'list_lxcs', args: {} }] },
		{ text: 'scratch (CT 110) is gone.' }
	);
	await login(page, env.admin);
	await startChat(page, 'remove the scratch container');
	const plan = page.getByTestId('plan-card');
	await expect(plan).toHaveAttribute('data-status', 'proposed', { timeout: scaled(45_000) });
	await expect(plan.getByTestId('plan-step')).toHaveCount(2);
	await page.getByTestId('approve-plan').click();
	await expect(plan).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(45_000) });
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('scratch (CT 110) is gone.', { timeout: scaled(45_000) });

	const sessionId = page.url().split('/').pop()!;
	const [{ n }] = await sql`select count(*)::int as n from plans where session_id = ${sessionId}`;
	expect(n).toBe(1);
	const reqs = await llm.requests();
	// The refusal came back in the same turn, with the reason.
	expect(JSON.stringify(reqs[1].body)).toMatch(/step 1: cannot run now: CT 110 is running/);
});
