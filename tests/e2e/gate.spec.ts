import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { login, test, expect } from './harness/fixtures';

test('settings → hosts: the node gate panel and a plain key warned as a full shell', async ({ page, env }) => {
	await login(page, env.admin);
	await page.goto('/settings');
	const panel = page.getByTestId('gate-install');
	await panel.locator('summary').click();
	const sha = createHash('sha256').update(readFileSync('deploy/nomos-gate')).digest('hex');
	await expect(panel.getByTestId('gate-files')).toContainText(`deploy/nomos-gate · sha256 ${sha}`);
	const pub = execFileSync('ssh-keygen', ['-y', '-f', env.proxmox.clientKeyPath], { encoding: 'utf8' }).trim().split(/\s+/).slice(0, 2).join(' ');
	await expect(panel.getByTestId('gate-line').first()).toHaveText(`restrict,command="/usr/local/sbin/nomos-gate --role mutate" ${pub}`);

	const row = page.getByTestId('host-row').filter({ hasText: env.proxmox.nodeName });
	await row.getByTestId('check-gate').click();
	await expect(row.getByTestId('host-status')).toContainText('this key still reaches a full shell');
});
