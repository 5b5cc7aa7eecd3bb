import type postgres from 'postgres';
import { llmControl } from '../doubles/llm/client';
import { insertFailedSessionFixture, insertHealthySessionFixture, insertNudgedSessionFixture } from '../helpers/review-fixture';
import { login, test, expect } from './harness/fixtures';

const TITLE = 'deploy TypeType on strong as LXC';

/** The failed session (and two healthier ones) in the e2e app's database, inserted once per run. */
async function fixture(sql: postgres.Sql): Promise<string> {
	const [found] = await sql<{ id: string }[]>`select id from chat_sessions where title = ${TITLE}`;
	if (found) return found.id;
	await insertHealthySessionFixture(sql);
	await insertNudgedSessionFixture(sql);
	return insertFailedSessionFixture(sql);
}

test('an admin finds the failed session ranked first, with its findings, charts and Markdown export', async ({ page, env, sql }) => {
	const id = await fixture(sql);
	await login(page, env.admin);
	await page.getByRole('link', { name: 'Review', exact: true }).click();
	await expect(page).toHaveURL(/\/admin\/review$/);
	await expect(page.getByTestId('review-page')).toBeVisible();

	const first = page.getByTestId('review-session-row').first();
	await expect(first).toHaveAttribute('data-session-id', id);
	await expect(first).toContainText(TITLE);
	await expect(first).toContainText('150');
	for (const kind of ['missing_capability', 'n_plus_one', 'operator_as_event_loop']) {
		await expect(first.locator(`[data-testid="session-kind"][data-kind="${kind}"]`)).toBeVisible();
	}
	// Both charts are drawn by chart.js on a canvas.
	for (const chart of ['chart-findings', 'chart-tools']) {
		const canvas = page.getByTestId(chart).locator('canvas');
		await expect(canvas).toBeVisible();
		expect((await canvas.boundingBox())!.height).toBeGreaterThan(100);
	}

	// Filters are GET parameters: a reached-only view leaves the failed session out.
	await page.getByLabel('Outcome').selectOption('reached');
	await page.getByRole('button', { name: 'Apply' }).click();
	await expect(page).toHaveURL(/outcome=reached/);
	await expect(page.getByTestId('review-session-row').first()).toBeVisible();
	await expect(page.locator(`[data-testid="review-session-row"][data-session-id="${id}"]`)).toHaveCount(0);
	// The overview exports as Markdown with the page's filter: here reached-only, so no failed session.
	await expect(page.getByTestId('export-overview')).toHaveAttribute('href', '/admin/review/export?outcome=reached');
	const filteredExport = await page.request.get('/admin/review/export?outcome=reached');
	expect(filteredExport.headers()['content-disposition']).toBe('attachment; filename="review-sessions-reached.md"');
	const filteredMd = await filteredExport.text();
	expect(filteredMd).toContain('- Filter: outcome reached');
	expect(filteredMd).not.toContain(id);
	await page.getByRole('link', { name: 'Reset' }).click();
	await expect(page).toHaveURL(/\/admin\/review$/);
	await expect(page.getByTestId('export-overview')).toHaveAttribute('href', '/admin/review/export');
	const overview = await page.request.get('/admin/review/export');
	expect(overview.status()).toBe(200);
	expect(overview.headers()['content-type']).toBe('text/markdown; charset=utf-8');
	const overviewMd = await overview.text();
	expect(overviewMd).toContain('# Session review: all sessions');
	expect(overviewMd).toContain('| missing_capability |');
	// The failed session is ranked first, linking to its own review.
	const firstRow = overviewMd.split('\n').find((l) => l.includes('/admin/review/'));
	expect(firstRow).toContain(`/admin/review/${id})`);
	expect(firstRow).toContain('not reached');
	const [overviewDownload] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-overview').click()]);
	expect(overviewDownload.suggestedFilename()).toBe('review-sessions.md');

	await page.getByTestId('review-session-row').first().getByRole('link', { name: TITLE }).click();
	await expect(page).toHaveURL(`/admin/review/${id}`);
	const findings = page.getByTestId('finding');
	await expect(findings.first()).toHaveAttribute('data-kind', 'missing_capability');
	await expect(findings.first()).toHaveAttribute('data-severity', 'high');
	await expect(findings.first()).toContainText('pct_create');
	await expect(page.locator('[data-testid="finding"][data-kind="n_plus_one"]')).toContainText('get_entity ×20 in message 1');
	await expect(page.locator('[data-testid="finding"][data-kind="operator_as_event_loop"]')).toContainText('continue');
	await expect(page.getByTestId('review-totals')).toContainText('150');
	await expect(page.getByTestId('total-messages')).toHaveText('10');
	await expect(page.getByTestId('review-message-row')).toHaveCount(10);
	await expect(page.getByTestId('review-message-row').nth(1)).toContainText('get_entity ×20');

	// Evidence links jump to the message rows.
	await findings.first().getByTestId('evidence-link').last().click();
	await expect(page).toHaveURL(/#msg-9$/);
	await expect(page.locator('#msg-9')).toContainText("I can't run pct create");

	// The export is a Markdown file.
	const href = (await page.getByTestId('export-markdown').getAttribute('href'))!;
	const res = await page.request.get(href);
	expect(res.status()).toBe(200);
	expect(res.headers()['content-type']).toBe('text/markdown; charset=utf-8');
	expect(res.headers()['content-disposition']).toBe(`attachment; filename="review-deploy-typetype-on-strong-as-lxc-${id.slice(0, 8)}.md"`);
	const md = await res.text();
	expect(md).toContain(`# Session review: ${TITLE}`);
	expect(md).toContain('| # | Role | Origin | Tool calls | Top tools | Summary |');
	expect(md).toContain('[high] missing_capability');
	expect(md).toContain('get_entity ×20');
	const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-markdown').click()]);
	expect(download.suggestedFilename()).toBe(`review-deploy-typetype-on-strong-as-lxc-${id.slice(0, 8)}.md`);
});

test('the narrative asks the model with the computed findings; a model error reads plainly', async ({ page, env, sql }) => {
	const id = await fixture(sql);
	const llm = llmControl(env.llmURL);
	await llm.reset();
	await login(page, env.admin);
	await page.goto(`/admin/review/${id}`);
	await expect(page.getByTestId('finding').first()).toBeVisible();

	await llm.push({ text: 'The operator wanted TypeType in a new LXC, but the agent had no pct_create action.' });
	await page.getByTestId('narrative-button').click();
	await expect(page.getByTestId('narrative')).toContainText('no pct_create action');
	const [req] = (await llm.requests()).slice(-1);
	expect(JSON.stringify(req.body)).toContain('missing_capability');

	await llm.push({ fault: 'http500' }, { fault: 'http500' });
	await page.getByTestId('narrative-button').click();
	await expect(page.getByTestId('narrative-error')).toContainText('The narrative could not be written');
	// The computed review does not depend on it.
	await expect(page.getByTestId('finding')).toHaveCount(4);
	await llm.reset();
});

test('a plain operator gets 403 for the review pages and the export', async ({ page, env, sql }) => {
	const id = await fixture(sql);
	await login(page, env.operator);
	await expect(page.getByRole('link', { name: 'Review', exact: true })).toHaveCount(0);
	for (const path of ['/admin/review', `/admin/review/${id}`]) {
		const res = await page.goto(path);
		expect(res?.status(), path).toBe(403);
		await expect(page.getByTestId('review-page')).toHaveCount(0);
	}
	expect((await page.request.get(`/admin/review/${id}/export`)).status()).toBe(403);
	expect((await page.request.get('/admin/review/export')).status()).toBe(403);
	const narrative = await page.request.post(`/admin/review/${id}/narrative`, { headers: { origin: env.baseURL } });
	expect(narrative.status()).toBe(403);
});

test('the session review shows the stored history summaries: what each covers and its tokens', async ({ page, env, sql }) => {
	const id = await fixture(sql);
	const [through] = await sql<{ id: string; seq: string }[]>`select id, seq from messages where session_id = ${id} order by seq offset 5 limit 1`;
	await sql`
		insert into history_summaries (session_id, through_message_id, through_seq, messages, text, tokens, folded_tokens, input_tokens, output_tokens, model)
		values (${id}, ${through.id}, ${through.seq}, 6, 'The operator wants TypeType on strong; pct_create was refused as unknown.', 31, 5200, 1400, 40, 'scripted')
		on conflict do nothing`;
	await login(page, env.admin);
	await page.goto(`/admin/review/${id}`);
	const summary = page.getByTestId('review-summary');
	await expect(summary).toHaveCount(1);
	await expect(summary).toHaveAttribute('data-through', '5');
	await expect(summary).toContainText('Covers messages #0–#5');
	await expect(summary.getByTestId('review-summary-tokens')).toHaveText('5.2k → 31 tokens');
	await expect(summary.getByTestId('review-summary-text')).toHaveText('The operator wants TypeType on strong; pct_create was refused as unknown.');
	await expect(page.getByTestId('review-summaries')).toContainText('written by the model');
	const md = await (await page.request.get(`/admin/review/${id}/export`)).text();
	expect(md).toContain('## History summaries');
	expect(md).toContain('- messages #0–#5: 5200 tokens → 31');
});
