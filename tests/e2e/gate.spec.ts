import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

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
	await expect(row.getByTestId('host-status')).toContainText(`Warning: the mutate key of ${env.proxmox.nodeName} still reaches a full shell`);
});

test('settings → hosts: the card warns of a full-shell key without a click, from the check a sync stores', async ({ page, env, sql }) => {
	// Never checked (as after its keys changed): no gate line on the card until a sync asks.
	await sql`update hosts set gate_state = null, gate_problem = null, gate_checked_at = null where name = ${env.proxmox.nodeName}`;
	await login(page, env.admin);
	await page.goto('/settings');
	const row = page.getByTestId('host-row').filter({ hasText: env.proxmox.nodeName });
	await expect(row.getByTestId('host-fingerprint')).toBeVisible();
	await expect(row.getByTestId('host-gate')).toHaveCount(0);
	await expect(async () => {
		await page.getByTestId('sync-now').click();
		await expect(page.getByTestId('sync-note')).toHaveText(/queued/, { timeout: scaled(2_000) });
	}).toPass({ timeout: scaled(30_000) });
	await expect(async () => {
		await page.reload();
		await expect(row.getByTestId('host-gate')).toContainText(`Warning: the mutate key of ${env.proxmox.nodeName} still reaches a full shell`, {
			timeout: scaled(2_000)
		});
	}).toPass({ timeout: scaled(30_000) });
	await expect(row.getByTestId('host-gate')).toContainText(`the mutate key of ${env.proxmox.nodeName} still reaches a full shell`);
	await expect(row.getByTestId('host-status')).toHaveCount(0);
});

test('settings → hosts: a mutation key gives the host two gate lines, read and mutate', async ({ page, env, sql }) => {
	await login(page, env.admin);
	await page.goto('/settings');
	const row = page.getByTestId('host-row').filter({ hasText: env.proxmox.nodeName });
	try {
		await row.getByRole('button', { name: 'Edit' }).click();
		// In edit mode the card holds a form (the name is an input's value, not text).
		const form = page.getByTestId('host-form');
		await form.getByTestId('host-mutation-key').fill(env.proxmox.clientKeyPath);
		await form.getByRole('button', { name: 'Save' }).click();
		await expect(row).toContainText('two keys');
		const panel = page.getByTestId('gate-install');
		await page.reload();
		await panel.locator('summary').click();
		const pub = execFileSync('ssh-keygen', ['-y', '-f', env.proxmox.clientKeyPath], { encoding: 'utf8' }).trim().split(/\s+/).slice(0, 2).join(' ');
		await expect(panel.locator(`[data-testid="gate-key"][data-host="${env.proxmox.nodeName}"]`).getByTestId('gate-line')).toHaveText([
			`restrict,command="/usr/local/sbin/nomos-gate --role read" ${pub}`,
			`restrict,command="/usr/local/sbin/nomos-gate --role mutate" ${pub}`
		]);
		const [saved] = await sql<{ mutation_key_path: string | null }[]>`select mutation_key_path from hosts where name = ${env.proxmox.nodeName}`;
		expect(saved.mutation_key_path).toBe(env.proxmox.clientKeyPath);
	} finally {
		await sql`update hosts set mutation_key_path = null where name = ${env.proxmox.nodeName}`;
	}
});
