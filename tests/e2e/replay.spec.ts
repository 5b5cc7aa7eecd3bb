import { llmControl } from '../doubles/llm/client';
import { insertHealthySessionFixture } from '../helpers/review-fixture';
import { login, test, expect } from './harness/fixtures';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

test('Replay on a review page re-runs the session in the worker and shows the two side by side', async ({ page, env, sql }) => {
	const id = await insertHealthySessionFixture(sql, { title: `replay me ${Date.now()}` });
	// The current model reads the same list, then says it is done without asking to restart anything.
	await llmControl(env.llmURL).push({ toolCalls: [{ name: 'list_lxcs', args: { host: 'strong' } }] }, { text: 'Caddy looks fine; nothing to restart.' });
	await login(page, env.admin);
	await page.goto(`/admin/review/${id}`);
	await page.getByTestId('replay-button').click();
	await expect(page).toHaveURL(new RegExp(`/admin/review/${id}/replay/[0-9a-f-]{36}$`));
	await expect(page.getByTestId('replay-status')).toHaveAttribute('data-status', 'done');
	const table = page.getByTestId('replay-comparison');
	await expect(table).toBeVisible();
	const row = (label: string) => table.locator(`[data-testid="replay-row"][data-label="${label}"]`);
	// The original read twice and asked for a restart; the replay read once (the recorded answer) and asked nothing.
	await expect(row('Tool calls').locator('td').nth(0)).toHaveText('3');
	await expect(row('Tool calls').locator('td').nth(1)).toHaveText('1');
	await expect(row('Requests').locator('td').nth(0)).toHaveText('restart lxc:strong/100');
	await expect(row('Requests').locator('td').nth(1)).toHaveText('—');
	await expect(row('Requests')).toHaveAttribute('data-same', 'false');
	await expect(row('Goal reached').locator('td').nth(1)).toHaveText('no');
	await expect(page.getByTestId('replay-verdict')).toContainText('the goal was not reached');

	await page.getByTestId('replay-case-name').fill(`caddy-${Date.now()}`);
	await page.getByTestId('replay-save-button').click();
	await expect(page.getByTestId('replay-case')).toContainText('npm run replay -- caddy-');
});
