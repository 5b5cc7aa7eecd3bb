import { login, test, expect } from './harness/fixtures';
import { llmControl } from '../doubles/llm/client';
import { waitForAlertOutcome } from '../helpers/alerts';

test('an admin makes a schedule in Settings: the next three runs (UTC) show as the cron is typed, a bad cron is named; pause, edit and delete are audited', async ({
	page,
	env,
	sql
}) => {
	await login(page, env.admin);
	await page.goto('/settings');
	const section = page.getByTestId('schedules-section');
	await section.getByTestId('schedule-name').fill('nightly upgrades');
	await section.getByTestId('schedule-cron').fill('0 3 * * *');
	await expect(section.getByTestId('schedule-next-run')).toHaveCount(3);
	const runs = await section.getByTestId('schedule-next-run').allTextContents();
	expect(runs.every((r) => /^\d{4}-\d\d-\d\d 03:00 UTC · /.test(r))).toBe(true);
	// A wrong field is named and nothing can be saved.
	await section.getByTestId('schedule-cron').fill('0 25 * * *');
	await expect(section.getByTestId('schedule-cron-error')).toHaveText('hour: "25" is outside 0–23');
	await expect(section.getByTestId('schedule-save')).toBeDisabled();
	await section.getByTestId('schedule-cron').fill('*/30 * * * mon-fri');
	await section.getByTestId('schedule-prompt').fill('Check every CT for pending upgrades and propose a plan.');
	await section.getByTestId('schedule-save').click();
	const row = section.getByTestId('schedule-row');
	await expect(row).toHaveCount(1);
	await expect(row).toContainText('*/30 * * * mon-fri');
	await expect(row.getByTestId('schedule-meta')).toContainText(/next \d{4}-\d\d-\d\d \d\d:(00|30) UTC · 0 runs/);
	await page.setViewportSize({ width: 390, height: 844 });
	await section.screenshot({ path: 'test-results/schedules-390.png' });
	await page.setViewportSize({ width: 1280, height: 800 });

	await row.getByTestId('schedule-pause').click();
	await expect(row.getByTestId('schedule-meta')).toContainText('paused');
	await expect(row).toHaveAttribute('data-enabled', 'false');
	await row.getByTestId('schedule-edit').click();
	await section.getByTestId('schedule-cron').fill('15 2 * * *');
	await section.getByTestId('schedule-enabled').check();
	await section.getByTestId('schedule-save').click();
	await expect(row).toContainText('15 2 * * *');
	await expect(row.getByTestId('schedule-meta')).toContainText(/next \d{4}-\d\d-\d\d 02:15 UTC/);
	await row.getByTestId('schedule-delete').click();
	await expect(section.getByTestId('schedule-row')).toHaveCount(0);
	const trail = await sql<{ action: string }[]>`select action from audit_log where subject_type = 'schedule' order by id`;
	expect(trail.map((t) => t.action)).toEqual(['schedule.created', 'schedule.paused', 'schedule.edited', 'schedule.deleted']);
});

test('in an alert investigation an admin mutes the alert group from its card for an hour, and the card says until when', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await login(page, env.admin);
	await page.goto('/settings');
	const hooks = page.getByTestId('alert-hooks-section');
	await hooks.getByTestId('hook-name').fill('kuma');
	await hooks.getByTestId('hook-kind').selectOption('generic');
	await hooks.getByTestId('hook-create').click();
	const url = (await hooks.getByTestId('hook-url').textContent())!.trim();
	const secret = (await hooks.getByTestId('hook-secret').textContent())!.trim();
	await llm.push({ text: 'Findings: caddy on CT 105 is stopped.' });
	const r = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
		body: JSON.stringify({ title: 'caddy down on ct105', key: 'caddy-105' })
	});
	const [opened] = await waitForAlertOutcome(sql, (await r.json()).deliveryId);
	await page.goto(`/chat/${opened.sessionId}`);
	const card = page.getByTestId('alert-note');
	await card.getByTestId('alert-mute-hour').click();
	await expect(card.getByTestId('alert-muted-until')).toContainText('Muted until');
	const [g] = await sql<
		{ minutes: number }[]
	>`select round(extract(epoch from muted_until - now()) / 60)::int as minutes from alert_groups where session_id = ${opened.sessionId}`;
	expect(g.minutes).toBeGreaterThan(55);
	expect(g.minutes).toBeLessThanOrEqual(60);
	// After a reload the card still says so; the next firing of the group is only recorded.
	await page.reload();
	await expect(page.getByTestId('alert-muted-until')).toBeVisible();
	const again = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
		body: JSON.stringify({ title: 'caddy down on ct105', key: 'caddy-105', status: 'resolved' })
	});
	expect(again.status).toBe(202);
	const refire = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
		body: JSON.stringify({ title: 'caddy down on ct105', key: 'caddy-105' })
	});
	expect((await waitForAlertOutcome(sql, (await refire.json()).deliveryId))[0].outcome).toBe('muted');
	await page.getByTestId('alert-unmute').click();
	await expect(page.getByTestId('alert-mute-hour')).toBeVisible();
});
