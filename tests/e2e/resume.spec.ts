// A run a live worker resumed after its worker stopped (issue #42 item 9): its card on Ops says so
// while it waits and with how it ended, at 1280 and 390 px. The rows are written as the resume
// writes them (executions/resume.ts); the resume itself runs in tests/integration/execution-resume.test.ts.
import { login, test, expect } from './harness/fixtures';

test('Ops shows "Resuming after the worker stopped", then "Resumed … already done", live', async ({ page, env, sql }) => {
	const because = 'its worker process (pid 4242 on pve-web) died';
	const [{ id }] = await sql<{ id: string }[]>`
		insert into executions (host_name, target, action, params, classification, hash, command_preview, reason, status, steps, approved_at, resumes, resumed_because)
		values ('strong', 'lxc:strong/160', 'pct_start', '{}'::jsonb, 'config_mutation', ${'e2e-resume-' + Date.now()}, 'pct start 160', 'resume e2e', 'approved',
			${JSON.stringify([{ index: 0, label: 'pct start', command: "'pct' 'start' '160'", startedAt: new Date().toISOString(), finishedAt: new Date().toISOString(), exitCode: null, stop: 'stopped' }])}::text::jsonb,
			now(), 1, ${because})
		returning id`;
	await login(page, env.admin);
	for (const width of [1280, 390]) {
		await page.setViewportSize({ width, height: 900 });
		await page.goto('/ops');
		const card = page.locator(`[data-testid="execution-card"][data-execution-id="${id}"]`).first();
		await expect(card.getByTestId('execution-resumed')).toHaveText(
			`Resuming after the worker stopped (${because}): reading it back, running it again only if it is not done.`
		);
		expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
	}
	// As the resume ends it: the row and its event in one transaction; the open page follows live.
	await sql.begin(async (tx) => {
		await tx`update executions set status = 'succeeded', finished_at = now(),
			result = ${`CT 160 started (resumed after the worker stopped — ${because}: the read-back found it already done, so nothing ran again)`}
			where id = ${id}`;
		await tx`insert into events (type, payload) values ('execution.updated', ${JSON.stringify({ executionId: id, terminal: 'succeeded' })}::text::jsonb)`;
	});
	const card = page.locator(`[data-testid="execution-card"][data-execution-id="${id}"]`).first();
	await expect(card).toHaveAttribute('data-status', 'succeeded');
	await expect(card.getByTestId('execution-resumed')).toHaveText(
		`Resumed after the worker stopped (${because}): the read-back found it already done, so nothing ran again.`
	);
	await page.screenshot({ path: 'test-results/resume-390.png', fullPage: true });
});
