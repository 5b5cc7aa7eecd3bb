import { readFileSync } from 'node:fs';
import path from 'node:path';
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

const UNIT = [
	'[Unit]',
	'Description=TypeType (e2e)',
	'After=network-online.target',
	'',
	'[Service]',
	`ExecStart=/usr/bin/node /opt/typetype/server.js --title 'it'"'"'s "quoted"' $(id) \`hostname\` ${'x'.repeat(180)}`,
	'Restart=always',
	'',
	'[Install]',
	'WantedBy=multi-user.target',
	''
].join('\n');

test('pct_push: the card shows the content verbatim; approved, it is written and verified by sha256', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{
					name: 'request_execution',
					args: {
						target: 'lxc:strong/100',
						action: 'pct_push',
						params: { path: '/etc/systemd/system/typetype-e2e.service', content: UNIT },
						reason: 'the unit file for TypeType'
					}
				}
			]
		},
		{ text: 'Waiting for your approval to write the unit file.' },
		{ text: 'The unit file is in place (checksum verified).' }
	);
	await login(page, env.admin);
	await startChat(page, 'write the typetype unit file into caddy');

	const card = page.getByTestId('execution-card');
	await expect(card.getByTestId('classification')).toHaveText('config mutation');
	const content = card.getByTestId('param-content');
	await expect(content).toBeVisible();
	expect(await content.evaluate((el) => el.textContent)).toBe(UNIT);
	// Scrollable, never wrapped: every character where it is in the file.
	expect(await content.evaluate((el) => getComputedStyle(el).whiteSpace)).toBe('pre');
	expect(await content.evaluate((el) => getComputedStyle(el).overflowX)).toBe('auto');
	await expect(card.getByTestId('param-path')).toHaveText('/etc/systemd/system/typetype-e2e.service');
	await expect(card.getByTestId('execution-params')).toContainText(`${Buffer.byteLength(UNIT)} bytes, shown verbatim`);
	await card.screenshot({ path: 'test-results/pct-push-card.png' });

	await card.getByTestId('approve').click();
	await expect(card).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(card.getByTestId('step-verified')).toHaveText('verified');
	const file = path.join(env.proxmox.stateDir, 'guests', '100', 'rootfs', 'etc/systemd/system/typetype-e2e.service');
	expect(readFileSync(file, 'utf8')).toBe(UNIT);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('checksum verified', { timeout: scaled(30_000) });
});

test('pct_set: the card lists the params; the approval runs it end to end', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{
					name: 'request_execution',
					args: { target: 'lxc:strong/101', action: 'pct_set', params: { onboot: true, description: 'media server (e2e)' }, reason: 'start media at boot' }
				}
			]
		},
		{ text: 'Waiting for your approval.' },
		{ text: 'media (CT 101) now starts at boot.' }
	);
	await login(page, env.admin);
	await startChat(page, 'make media start at boot');

	const card = page.getByTestId('execution-card');
	await expect(card.getByTestId('command-preview')).toHaveText("'pct' 'set' '101' '--onboot' '1' '--description' 'media server (e2e)'");
	await expect(card.getByTestId('param-onboot')).toHaveText('true');
	await expect(card.getByTestId('param-description')).toHaveText('media server (e2e)');
	await card.getByTestId('approve').click();
	await expect(card).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(card.getByTestId('execution-step').filter({ hasText: 'pct set' })).toContainText('pct set');
	const ct = JSON.parse(readFileSync(path.join(env.proxmox.stateDir, 'cts', '101.json'), 'utf8')) as { onboot?: number; description?: string };
	expect(ct).toMatchObject({ onboot: 1, description: 'media server (e2e)' });
	await expect(page.getByTestId('system-note').filter({ hasText: 'pct_set on lxc:strong/101' })).toContainText(
		'succeeded: CT 101 set: onboot=true, description'
	);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('now starts at boot', { timeout: scaled(30_000) });
});
