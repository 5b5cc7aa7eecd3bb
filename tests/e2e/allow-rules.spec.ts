import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

const restart = (target: string, op = 'restart') => ({
	toolCalls: [{ name: 'request_execution', args: { target, action: 'systemctl', params: { unit: 'cron', op }, reason: `${op} cron on ${target}` } }]
});

test('always allow from a card: listed in Settings, the next match runs by rule, revoked it waits again', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	const words = 'systemctl on any CT on host strong, when op = restart';
	await llm.push(restart('lxc:strong/100'), { text: 'Waiting for your approval.' }, { text: 'Restarted.' });
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('restart cron in caddy');
	await page.getByTestId('send').click();

	const first = page.getByTestId('execution-card').filter({ hasText: 'lxc:strong/100' });
	await expect(first).toHaveAttribute('data-status', 'awaiting_approval');
	await first.getByTestId('always-allow').click();
	const form = first.getByTestId('always-allow-form');
	await form.getByTestId('rule-pattern-text').fill('lxc:*/100');
	await expect(form.getByTestId('rule-pattern-error')).toBeVisible();
	await expect(form.getByTestId('create-rule')).toBeDisabled();
	await form.locator('input[type="radio"][value="lxc:strong/*"]').check();
	await expect(form.getByTestId('rule-pattern-error')).toHaveCount(0);
	await form.getByTestId('rule-constraint').filter({ hasText: 'op' }).locator('input[type="checkbox"]').check();
	await expect(form.getByTestId('rule-words')).toContainText(words);
	await page.setViewportSize({ width: 1280, height: 1400 });
	await first.screenshot({ path: 'test-results/allow-rules-form.png' });
	await form.getByTestId('create-rule').click();
	await expect(first.getByTestId('rule-created')).toContainText(words);
	// The rule is for what comes next; this one still waits for its own decision.
	await expect(first).toHaveAttribute('data-status', 'awaiting_approval');
	await first.getByTestId('approve').click();
	await expect(first).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	const chat = page.url();

	await page.goto('/settings');
	const row = page.getByTestId('rule-row').filter({ hasText: words });
	await expect(row).toHaveAttribute('data-active', 'true');
	await expect(row.getByTestId('rule-meta')).toContainText('by admin');

	// The next matching request runs at once, and says so.
	await llm.push(restart('lxc:strong/101'), { text: 'It ran by your rule.' }, { text: 'Done.' });
	await page.goto(chat);
	await page.getByTestId('composer-input').fill('now media');
	await page.getByTestId('send').click();
	const second = page.getByTestId('execution-card').filter({ hasText: 'lxc:strong/101' });
	await expect(second).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(second.getByTestId('decision')).toContainText(`approved by rule “${words}”`);
	await expect(second.getByTestId('approve')).toHaveCount(0);
	await second.screenshot({ path: 'test-results/allow-rules-approved.png' });
	const reqs = await llm.requests();
	const sent = JSON.stringify(reqs.map((r) => r.body));
	expect(sent).toContain('Always-allow rules in force');
	expect(sent).toContain(words);
	const [audit] = await sql`select route from audit_log where action = 'execution.approved' and detail->>'target' = 'lxc:strong/101' order by id desc limit 1`;
	const [rule] = await sql`select id from allow_rules where pattern = 'lxc:strong/*' and action = 'systemctl' and revoked_at is null`;
	expect(audit.route).toBe(`rule:${rule.id}`);

	// Edited in Settings: a pattern that could reach other hosts is refused, a narrower one is kept.
	await page.goto('/settings');
	await page.screenshot({ path: 'test-results/allow-rules-settings.png', fullPage: true });
	const byId = page.locator(`[data-testid="rule-row"][data-rule-id="${rule.id}"]`);
	await byId.getByTestId('rule-edit').click();
	await byId.getByTestId('rule-edit-pattern').fill('lxc:*/100');
	await byId.getByTestId('rule-save').click();
	await expect(byId.getByTestId('rule-status')).toContainText('a target pattern');
	await byId.getByTestId('rule-edit-pattern').fill('lxc:strong/name=c*');
	await byId.getByTestId('rule-save').click();
	await expect(byId.getByTestId('rule-words')).toHaveText('systemctl on CTs on host strong whose hostname matches c*, when op = restart');

	// Revoked: the next one waits.
	await byId.getByTestId('rule-revoke').click();
	await expect(byId).toHaveAttribute('data-active', 'false');
	await expect(byId.getByTestId('rule-meta')).toContainText('revoked by admin');

	await llm.push(restart('lxc:strong/100'), { text: 'Waiting for your approval.' });
	await page.goto(chat);
	await page.getByTestId('composer-input').fill('once more');
	await page.getByTestId('send').click();
	const third = page.getByTestId('execution-card').filter({ hasText: 'lxc:strong/100' }).last();
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('Waiting for your approval.', { timeout: scaled(30_000) });
	await expect(third).toHaveAttribute('data-status', 'awaiting_approval');
	await expect(page.getByTestId('execution-card').filter({ hasText: 'lxc:strong/100' })).toHaveCount(2);
	// Leave nothing pending for the specs that follow.
	await llm.push({ text: 'Understood, not restarting it.' });
	await third.getByTestId('deny').click();
	await third.getByTestId('confirm-deny').click();
	await expect(third).toHaveAttribute('data-status', 'denied');
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('Understood, not restarting it.', {
		timeout: scaled(30_000)
	});
});
