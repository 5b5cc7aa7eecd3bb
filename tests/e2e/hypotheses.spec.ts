// Hypotheses (#33): the scripted model presents three as cards; its checks settle two of them on
// this tab and on another tab of the same chat, live; "Pursue this" sends the choice through the
// chat's send path and the model's next request carries it; the admin review lists them.
import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';

const CT = 'lxc:strong/100';
/** A scripted turn with SSH round trips, on a loaded machine: what waits for one waits this long. */
const TURN = 30_000;
const three = [
	{ id: 'h1', statement: 'CT 100 (caddy) is stopped', evidence: ['e-list'], check: { action: 'pct_status', target: CT }, confidence: 'high' },
	{
		id: 'h2',
		statement: 'The caddy unit inside CT 100 failed',
		evidence: ['e-state'],
		check: { action: 'service_status', target: CT, params: { unit: 'caddy' } },
		confidence: 'medium'
	},
	{
		id: 'h3',
		statement: 'CT 100 ran out of memory',
		evidence: ['e-list', 'e-state'],
		check: { action: 'get_lxc_state', params: { name: 'caddy' } },
		confidence: 'low'
	}
];

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

test('cards from the scripted model, verdicts live on two tabs, "Pursue this" reaches the model, the review lists them', async ({ page, browser, env }) => {
	// Three turns, two read-only executions over SSH and two tabs: more than one default test's worth.
	test.slow();
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{ id: 'e-list', name: 'list_lxcs', args: {} },
				{ id: 'e-state', name: 'get_lxc_state', args: { name: 'caddy' } }
			]
		},
		{ toolCalls: [{ id: 'e-hyp', name: 'present_hypotheses', args: { hypotheses: three } }] },
		{ text: 'Three candidates; say the word and I check them.' }
	);
	await page.setViewportSize({ width: 1280, height: 900 });
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('caddy does not answer, why?');
	await page.getByTestId('send').click();

	const card = page.getByTestId('hypotheses');
	await expect(card.getByTestId('hypothesis')).toHaveCount(3, { timeout: TURN });
	await expect(card.getByTestId('hypothesis-statement')).toHaveText(three.map((h) => h.statement));
	await expect(card.getByTestId('hypothesis-verdict')).toHaveText(['open', 'open', 'open']);
	await expect(card.getByTestId('hypothesis-confidence')).toHaveText(['high confidence', 'medium confidence', 'low confidence']);
	await expect(card.locator('[data-id="h1"]').getByTestId('hypothesis-evidence')).toHaveText(['list_lxcs']);
	await expect(card.locator('[data-id="h3"]').getByTestId('hypothesis-evidence')).toHaveText(['list_lxcs', 'get_lxc_state caddy']);
	await expect(card.locator('[data-id="h2"]').getByTestId('hypothesis-check')).toHaveText(`service_status on ${CT} {"unit":"caddy"}`);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toHaveAttribute('data-status', 'complete', { timeout: TURN });

	// A second tab on the same chat, its live stream open before the checks run.
	const other = await (await browser.newContext()).newPage();
	await login(other, env.admin);
	await other.goto(page.url());
	await expect(other.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');
	await expect(other.getByTestId('hypothesis-verdict')).toHaveText(['open', 'open', 'open']);

	await llm.push(
		{
			toolCalls: [
				{ id: 'e-chk1', name: 'request_execution', args: { target: CT, action: 'pct_status', params: {}, reason: 'check h1' } },
				{ id: 'e-chk2', name: 'request_execution', args: { target: CT, action: 'service_status', params: { unit: 'caddy' }, reason: 'check h2' } }
			]
		},
		{
			toolCalls: [
				{ id: 'e-m1', name: 'mark_hypothesis', args: { id: 'h1', verdict: 'refuted', result: 'pct status: running', evidence: ['e-chk1'] } },
				{ id: 'e-m2', name: 'mark_hypothesis', args: { id: 'h2', verdict: 'confirmed', result: 'caddy.service is not active', evidence: ['e-chk2'] } }
			]
		},
		{ text: 'h2 holds: the caddy unit is down.' }
	);
	await page.getByTestId('composer-input').fill('check them');
	await page.getByTestId('send').click();
	for (const tab of [page, other]) {
		await expect(tab.getByTestId('hypothesis-verdict')).toHaveText(['refuted', 'confirmed', 'open'], { timeout: TURN });
		await expect(tab.getByTestId('hypothesis-result')).toHaveText(['pct status: running', 'caddy.service is not active']);
	}
	// The checks were read-only: no approval card in the chat.
	await expect(page.locator('[data-testid="execution-card"][data-status="awaiting_approval"]')).toHaveCount(0);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('h2 holds', { timeout: TURN });
	await page.getByTestId('hypotheses').screenshot({ path: 'test-results/hypotheses-1280.png' });

	await page.setViewportSize({ width: 390, height: 844 });
	await page.getByTestId('hypotheses').scrollIntoViewIfNeeded();
	await page.getByTestId('hypotheses').screenshot({ path: 'test-results/hypotheses-390.png' });
	const box = await page.getByTestId('hypotheses').boundingBox();
	expect(box!.width).toBeLessThanOrEqual(390);

	// "Pursue this": the operator's choice, as their message; the model's next request carries it.
	await llm.push({ text: 'Pursuing h2: I will look at the unit.' });
	const before = (await llm.requests()).length;
	await page.locator('[data-testid="hypothesis"][data-id="h2"]').getByTestId('pursue').click();
	await expect(page.locator('[data-testid="message"][data-role="user"]').last()).toContainText('Pursue hypothesis h2: The caddy unit inside CT 100 failed', {
		timeout: TURN
	});
	await expect(page.locator('[data-testid="hypothesis"][data-id="h2"]').getByTestId('hypothesis-pursued')).toBeVisible();
	await expect(other.locator('[data-testid="hypothesis"][data-id="h2"]').getByTestId('hypothesis-pursued')).toBeVisible();
	await expect(page.getByTestId('pursue')).toHaveCount(0);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('Pursuing h2', { timeout: TURN });
	const sent = (await llm.requests()).slice(before).filter((r) => r.path.endsWith('/chat/completions'));
	expect(sent).toHaveLength(1);
	const lastUser = sent[0].body!.messages!.filter((m) => m.role === 'user').at(-1);
	expect(JSON.stringify(lastUser?.content)).toContain('Pursue hypothesis h2: The caddy unit inside CT 100 failed');

	// The admin review shows the set, the verdicts and the pick.
	const sessionId = page.url().split('/').pop()!;
	await page.setViewportSize({ width: 1280, height: 900 });
	await page.goto(`/admin/review/${sessionId}`);
	const rows = page.getByTestId('review-hypothesis');
	await expect(rows).toHaveCount(3);
	await expect(rows.nth(0)).toHaveAttribute('data-verdict', 'refuted');
	await expect(rows.nth(1)).toHaveAttribute('data-verdict', 'confirmed');
	await expect(rows.nth(2)).toHaveAttribute('data-verdict', 'open');
	await expect(rows.nth(1).getByTestId('review-hypothesis-pursued')).toBeVisible();
	await other.context().close();
});
