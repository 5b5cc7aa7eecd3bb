import { login, test, expect } from './harness/fixtures';

test('the shell: sidebar, home, ops, settings with the pinned host', async ({ page, env }) => {
	await login(page, env.admin);
	await expect(page.getByTestId('home')).toBeVisible();
	await expect(page.getByTestId('model-status')).toContainText('scripted');
	await expect(page.getByTestId('hosts-status')).toContainText(env.proxmox.nodeName);
	await page.screenshot({ path: 'test-results/shell-home.png', fullPage: true });

	await page.getByRole('link', { name: 'Ops', exact: true }).click();
	await expect(page.getByTestId('ops-page')).toBeVisible();

	await page.getByRole('link', { name: 'Settings', exact: true }).click();
	const row = page.getByTestId('host-row').filter({ hasText: env.proxmox.nodeName });
	await expect(row.getByTestId('host-fingerprint')).toHaveText(`pinned ${env.proxmox.hostKeyFingerprint}`);
	await row.getByTestId('test-host').click();
	await expect(row.getByTestId('host-status')).toContainText('Connected as root');

	await page.getByTestId('sync-now').click();
	await expect(page.getByTestId('sync-note')).toContainText('Inventory refresh queued');

	await page.getByTestId('theme-toggle').click();
	await page.screenshot({ path: 'test-results/shell-settings-theme.png', fullPage: true });
});

test('adding a host: a bad value gets a readable error, an unpinned host needs confirming', async ({ page, env }) => {
	await login(page, env.admin);
	await page.goto('/settings');
	await page.getByTestId('add-host').click();
	const form = page.getByTestId('host-form');
	await form.getByLabel('Name').fill('second');
	await form.getByLabel('Address').fill('127.0.0.1');
	await form.getByLabel('Port').fill('70000');
	await form.getByLabel(/Private key path/).fill(env.proxmox.clientKeyPath);
	await form.getByRole('button', { name: 'Add host' }).click();
	await expect(form.getByRole('alert')).toContainText('port:');

	await form.getByLabel('Port').fill(String(env.proxmox.port));
	await form.getByRole('button', { name: 'Add host' }).click();
	const row = page.getByTestId('host-row').filter({ hasText: 'second' });
	await expect(row.getByTestId('host-fingerprint')).toContainText('not pinned');
	await expect(row.getByTestId('test-host')).toBeDisabled();
	await row.getByRole('button', { name: 'Scan host key' }).click();
	await expect(row.getByTestId('host-status')).toContainText(env.proxmox.hostKeyFingerprint);
	await row.getByTestId('pin-host').click();
	await expect(row.getByTestId('host-fingerprint')).toHaveText(`pinned ${env.proxmox.hostKeyFingerprint}`);
	await row.getByTestId('test-host').click();
	await expect(row.getByTestId('host-status')).toContainText('Connected as root');
	await row.getByRole('button', { name: 'Remove' }).click();
	await expect(page.getByTestId('host-row').filter({ hasText: 'second' })).toHaveCount(0);
});
