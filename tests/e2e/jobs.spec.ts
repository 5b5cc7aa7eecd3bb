// A background job that gives up shows on an open Ops page at once (the fleet stream, no
// reload), with its task, reason, count and time; an admin dismisses it (audited); an operator
// only sees it. The job really runs in the app's worker and really fails: a notice job whose
// payload is not a notice, with one attempt.
import type { Page, TestInfo } from '@playwright/test';
import { login, test, expect } from './harness/fixtures';

/** A viewport screenshot kept with the test's results (look at them: test-results/…/*.png). */
async function shoot(page: Page, info: TestInfo, name: string) {
	const file = info.outputPath(`${name}.png`);
	await page.screenshot({ path: file, fullPage: true });
	await info.attach(name, { path: file, contentType: 'image/png' });
}

test.beforeEach(async ({ sql }) => {
	// Another spec's webhook deliveries may have given up; this one counts its own.
	await sql`select graphile_worker.complete_jobs(array(
		select id from graphile_worker.jobs where task_identifier = 'notify__webhook' and attempts >= max_attempts))`;
});

test('a job that gives up appears on the open Ops page, says why, and an admin dismisses it', async ({ page, env, sql }, info) => {
	await login(page, env.admin);
	await page.goto('/ops');
	await expect(page.getByTestId('ops-page')).toBeVisible();
	const row = page.getByTestId('gave-up-job').and(page.locator('[data-task="notify__webhook"]'));
	await expect(row).toHaveCount(0);

	await sql`select graphile_worker.add_job('notify__webhook', ${JSON.stringify({ webhookId: 'not-a-notice' })}::text::json, max_attempts => 1)`;
	await expect(row).toBeVisible();
	await expect(page.getByTestId('ops-gave-up').getByRole('heading')).toContainText('Background jobs that gave up');
	await expect(row).toContainText('Webhook notice');
	await expect(row.getByTestId('gave-up-reason')).toHaveText('notify__webhook: invalid payload: notice: Invalid input: expected object, received undefined');
	await expect(row.getByTestId('gave-up-count')).toHaveText('×1');
	await expect(row.getByTestId('gave-up-when')).toContainText('last gave up');
	await expect(row.getByTestId('gave-up-dismiss')).toBeVisible();
	// A notice job may be run again by hand; a second one that gives up joins the group.
	await expect(row.getByTestId('gave-up-retry')).toBeVisible();
	await sql`select graphile_worker.add_job('notify__webhook', ${JSON.stringify({ webhookId: 'still-not-a-notice' })}::text::json, max_attempts => 1)`;
	await expect(row.getByTestId('gave-up-count')).toHaveText('×2');

	await page.setViewportSize({ width: 1280, height: 800 });
	await shoot(page, info, 'ops-gave-up-1280');
	const phone = await page
		.context()
		.browser()!
		.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
	const phonePage = await phone.newPage();
	// On a phone the sidebar is a closed drawer, so sign in by hand (login() waits for the sidebar).
	await phonePage.goto('/login');
	await phonePage.getByLabel('Username').fill(env.admin.username);
	await phonePage.getByLabel('Password').fill(env.admin.password);
	await phonePage.getByRole('button', { name: 'Sign in' }).click();
	await expect(phonePage.getByTestId('app-shell')).toBeVisible();
	await phonePage.goto('/ops');
	await expect(phonePage.getByTestId('gave-up-job').getByTestId('gave-up-count')).toHaveText('×2');
	await shoot(phonePage, info, 'ops-gave-up-390');
	const width = await phonePage.evaluate(() => document.documentElement.scrollWidth);
	expect(width, 'no sideways scroll at 390 px').toBeLessThanOrEqual(390);
	await phone.close();

	// An operator sees the same, without the buttons.
	const other = await page.context().browser()!.newContext();
	const opPage = await other.newPage();
	await login(opPage, env.operator);
	await opPage.goto('/ops');
	const opRow = opPage.getByTestId('gave-up-job').and(opPage.locator('[data-task="notify__webhook"]'));
	await expect(opRow.getByTestId('gave-up-reason')).toHaveText('notify__webhook: invalid payload: notice: Invalid input: expected object, received undefined');
	await expect(opRow.getByRole('button')).toHaveCount(0);

	await row.getByTestId('gave-up-dismiss').click();
	await expect(row).toHaveCount(0);
	// The operator's open page hears it too.
	await expect(opRow).toHaveCount(0);
	await other.close();
	const audit = await sql<{ detail: { count: number } }[]>`
		select detail from audit_log where action = 'jobs.dismissed' and subject_id = 'notify__webhook' order by id desc limit 1`;
	expect(audit[0]?.detail.count).toBe(2);
	await page.reload();
	await expect(page.getByTestId('ops-page')).toBeVisible();
	await expect(row).toHaveCount(0);
});
