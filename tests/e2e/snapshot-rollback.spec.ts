// Snapshot before a CT mutation; when it fails, Roll back asks (with its own approval card) to
// return the CT to that snapshot.
import { llmControl } from '../doubles/llm/client';
import { setFaultIn } from '../doubles/proxmox/state';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

test('a failed pct_set on lvmthin: snapshot step, failure, Roll back → approval card → approved → rolled back', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	await llm.push(
		{
			toolCalls: [
				{ name: 'request_execution', args: { target: 'lxc:strong/102', action: 'pct_set', params: { memory: 2048 }, reason: 'more memory for backup' } }
			]
		},
		{ text: 'Waiting for your approval.' },
		{ text: 'pct set failed; Nomos took a snapshot before, you can roll back from the card.' },
		{ text: 'CT 102 is back at its snapshot.' },
		{ text: 'ok' }
	);
	await setFaultIn(env.proxmox.stateDir, 'fail', { tool: 'pct', match: 'set 102', exitCode: 255, stderr: 'unable to apply pending change memory' });
	try {
		await login(page, env.admin);
		await page.getByTestId('composer-input').fill('give backup more memory');
		await page.getByTestId('send').click();
		const card = page.getByTestId('execution-card').filter({ hasText: 'more memory for backup' }).first();
		await card.getByTestId('approve').click();
		await expect(card).toHaveAttribute('data-status', 'failed', { timeout: scaled(30_000) });
		const steps = card.getByTestId('execution-step');
		await expect(steps.first()).toContainText(/snapshot before \(nomos-[0-9a-f]{12}\)/);
		await expect(steps.filter({ hasText: 'pct set' })).toContainText('exit 255');
		await expect(card.getByTestId('execution-error')).toContainText('unable to apply pending change memory');
		await expect(card.getByTestId('execution-error')).toContainText('the operator can roll back to it from the card');
		await page.screenshot({ path: 'test-results/snapshot-failed.png', fullPage: true });
	} finally {
		await setFaultIn(env.proxmox.stateDir, 'fail', null);
	}
	const failedCard = page.getByTestId('execution-card').filter({ hasText: 'more memory for backup' }).first();
	const failedId = await failedCard.getAttribute('data-execution-id');
	await failedCard.getByTestId('rollback-execution').click();

	const rollback = page.locator('[data-testid="execution-card"][data-status="awaiting_approval"]').filter({ hasText: 'pct_rollback' });
	await expect(rollback).toBeVisible({ timeout: scaled(10_000) });
	const [{ name }] = await sql<{ name: string }[]>`select params->>'name' as name from executions where action = 'pct_rollback' and retry_of = ${failedId}`;
	expect(name).toMatch(/^nomos-[0-9a-f]{12}$/);
	await expect(rollback.getByTestId('command-preview')).toHaveText(`'pct' 'rollback' '102' '${name}'`);
	await expect(rollback.getByTestId('classification')).toHaveText('destructive');
	await rollback.screenshot({ path: 'test-results/snapshot-rollback-card.png' });
	await rollback.getByTestId('approve').click();
	const done = page.locator(`[data-testid="execution-card"]`).filter({ hasText: 'pct_rollback' }).first();
	await expect(done).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(done.getByTestId('execution-step')).toContainText(`pct rollback ${name}`);
	// The continuation after the rollback: the agent's reply (and no later spec's script step eaten by it).
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('CT 102 is back at its snapshot.', {
		timeout: scaled(20_000)
	});
	await page.screenshot({ path: 'test-results/snapshot-rolled-back.png', fullPage: true });
});
