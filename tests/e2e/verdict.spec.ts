// The read-back verdict on a mutation's card (#42 item 3), on Ops at 1280 and 390 px, and the
// admin review's list of changes that were not verified. The rows are written as the runner
// writes them (tests/integration/verdict.test.ts runs the real read-backs).
import type postgres from 'postgres';
import { login, test, expect } from './harness/fixtures';

const RUN = Math.random().toString(36).slice(2, 8);

async function inserted(sql: postgres.Sql): Promise<{ sessionId: string; ids: Record<'verified' | 'still_failing' | 'inconclusive', string> }> {
	const [s] = await sql<{ id: string }[]>`insert into chat_sessions (title) values (${`verdicts ${RUN}`}) returning id`;
	await sql`insert into messages (session_id, role, parts, status, origin) values (${s.id}, 'user', ${JSON.stringify([{ type: 'text', text: 'start my containers' }])}::text::jsonb, 'complete', 'chat')`;
	const rows = [
		{ verdict: 'verified', vmid: 301, status: 'succeeded', result: 'CT 301 started — healthy', error: null, detail: 'CT running (read back: status: running)' },
		{
			verdict: 'still_failing',
			vmid: 302,
			status: 'failed',
			result: null,
			error: 'unhealthy: CT 302 is not running; read back: status: stopped (the approved command itself succeeded)',
			detail: 'CT 302 is not running; read back: status: stopped'
		},
		{
			verdict: 'inconclusive',
			vmid: 303,
			status: 'succeeded',
			result: 'CT 303 started',
			error: null,
			detail: 'could not read CT running: pct status did not answer within 60 s'
		}
	] as const;
	const ids = {} as Record<(typeof rows)[number]['verdict'], string>;
	for (const r of rows) {
		const steps = [
			{
				index: 0,
				label: 'pct start',
				command: `'pct' 'start' '${r.vmid}'`,
				startedAt: new Date().toISOString(),
				finishedAt: new Date().toISOString(),
				exitCode: 0,
				durationMs: 900,
				stdoutTail: '',
				stderrTail: ''
			},
			{
				index: 1,
				label: 'health: CT running',
				command: `'pct' 'status' '${r.vmid}'`,
				kind: 'health',
				startedAt: new Date().toISOString(),
				finishedAt: new Date().toISOString(),
				exitCode: r.verdict === 'inconclusive' ? 15 : 0,
				...(r.verdict === 'inconclusive' ? { stop: 'gone' } : { verified: r.verdict === 'verified' }),
				durationMs: 400,
				stdoutTail: r.verdict === 'inconclusive' ? '' : `status: ${r.verdict === 'verified' ? 'running' : 'stopped'}\n`,
				stderrTail: ''
			}
		];
		const [e] = await sql<{ id: string }[]>`
			insert into executions (requested_by_session, host_name, target, action, classification, hash, command_preview, reason, status, steps, result, error, verdict, verdict_detail, approved_at, started_at, finished_at)
			values (${s.id}, 'strong', ${`lxc:strong/${r.vmid}`}, 'pct_start', 'config_mutation', ${`verdict-${RUN}-${r.vmid}`}, ${`pct start ${r.vmid}`}, ${`start CT ${r.vmid}`}, ${r.status},
				${JSON.stringify(steps)}::text::jsonb, ${r.result}, ${r.error}, ${r.verdict}, ${r.detail}, now(), now(), now())
			returning id`;
		await sql`insert into execution_sessions (execution_id, session_id) values (${e.id}, ${s.id}) on conflict do nothing`;
		ids[r.verdict] = e.id;
	}
	return { sessionId: s.id, ids };
}

test('the card shows the read-back verdict, inconclusive never as success; the review lists what was not verified', async ({ page, env, sql }) => {
	const { sessionId, ids } = await inserted(sql);
	await login(page, env.admin);
	await page.setViewportSize({ width: 1280, height: 900 });
	await page.goto('/ops');
	const card = (id: string) => page.locator(`[data-testid="execution-card"][data-execution-id="${id}"]`);

	const verified = card(ids.verified);
	await expect(verified.getByTestId('execution-verdict')).toHaveAttribute('data-verdict', 'verified');
	await expect(verified.getByTestId('execution-verdict')).toHaveText('Read back: verified — CT running (read back: status: running)');
	await expect(verified.getByTestId('status-pill')).toHaveText('succeeded');

	const failing = card(ids.still_failing);
	await expect(failing.getByTestId('execution-verdict')).toHaveText('Read back: still failing — CT 302 is not running; read back: status: stopped');
	await expect(failing.getByTestId('status-pill')).toHaveText('failed');

	// Inconclusive: the command exited 0, but nothing on the card says it succeeded.
	const unknown = card(ids.inconclusive);
	await expect(unknown.getByTestId('execution-verdict')).toHaveText(
		'Read back: inconclusive: not verified — could not read CT running: pct status did not answer within 60 s'
	);
	await expect(unknown.getByTestId('status-pill')).toHaveText('ran · unverified');
	await expect(unknown.getByTestId('execution-result')).toHaveCount(0);
	await expect(unknown.getByTestId('execution-health')).toHaveCount(0);
	// The verdict stands in for the health line (one statement, not two).
	await expect(failing.getByTestId('execution-health')).toHaveCount(0);
	await expect(unknown).not.toContainText(/succeeded|healthy/i);

	for (const [width, height] of [
		[1280, 900],
		[390, 844]
	]) {
		await page.setViewportSize({ width, height });
		for (const [name, c] of [
			['inconclusive', unknown],
			['still-failing', failing]
		] as const) {
			await c.scrollIntoViewIfNeeded();
			// Nothing of the verdict runs off the card at this width.
			const [cardBox, verdictBox] = [await c.boundingBox(), await c.getByTestId('execution-verdict').boundingBox()];
			expect(verdictBox!.x + verdictBox!.width).toBeLessThanOrEqual(cardBox!.x + cardBox!.width + 0.5);
			expect(cardBox!.x + cardBox!.width).toBeLessThanOrEqual(width);
			await c.screenshot({ path: `test-results/verdict-${name}-${width}.png` });
		}
	}

	await page.setViewportSize({ width: 1280, height: 900 });
	await page.goto(`/admin/review/${sessionId}`);
	const listed = page.getByTestId('review-unverified-execution');
	await expect(listed).toHaveCount(2);
	await expect(listed.nth(0)).toHaveAttribute('data-verdict', 'still_failing');
	await expect(page.getByTestId('review-unverified').locator('[data-verdict="inconclusive"]')).toContainText(
		'pct_start on lxc:strong/303 inconclusive: not verified — could not read CT running'
	);
	await page.getByTestId('review-unverified').screenshot({ path: 'test-results/verdict-review-1280.png' });
});
