import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

test('tokens and cost under each reply and the session total in the chat header, live; the review shows them', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [{ name: 'search_knowledge', args: { query: 'backup schedule' } }],
			usage: { promptTokens: 40_000, completionTokens: 500, cachedTokens: 32_000 }
		},
		{ text: 'Backups run nightly at 02:00.', usage: { promptTokens: 41_000, completionTokens: 120, cachedTokens: 40_000 } }
	);
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('When do backups run?');
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
	const sessionId = page.url().split('/').pop()!;
	const reply = page.locator('[data-testid="message"][data-role="assistant"]');
	await expect(reply).toHaveAttribute('data-status', 'complete');
	// Two model calls: 81,000 in (72,000 of them cached), 620 out; at $2 in / $8 out / $0.5 cached per million: $0.05896.
	await expect(reply.getByTestId('message-usage')).toHaveText('81k in · 620 out · 72k cached · $0.06');
	const header = page.getByTestId('session-usage');
	await expect(header).toHaveText('81k in · 620 out · 72k cached · $0.06');
	await page.screenshot({ path: test.info().outputPath('chat-usage.png') });

	// The next turn adds to the header without a reload.
	await llm.push({ text: 'Anything else?', usage: { promptTokens: 45_000, completionTokens: 80, cachedTokens: 44_000 } });
	await page.getByTestId('composer-input').fill('Thanks');
	await page.getByTestId('send').click();
	await expect(reply.nth(1)).toHaveAttribute('data-status', 'complete');
	await expect(reply.nth(1).getByTestId('message-usage')).toHaveText('45k in · 80 out · 44k cached · $0.02');
	await expect(header).toHaveText('126k in · 700 out · 116k cached · $0.08');

	// And after a reload, from the stored messages.
	await page.reload();
	await expect(page.getByTestId('session-usage')).toHaveText('126k in · 700 out · 116k cached · $0.08');

	await page.goto(`/admin/review/${sessionId}`);
	await expect(page.getByTestId('total-tokens')).toHaveText('127k');
	await expect(page.getByTestId('total-cost')).toHaveText(/· \$0\.08$/);
	await page.getByTestId('review-totals').screenshot({ path: test.info().outputPath('review-session-tokens.png') });
	await page.goto('/admin/review');
	// Every session's tokens priced (other specs' turns too): at least this session's $0.08.
	const cost = page.getByTestId('review-cost');
	await expect(cost).toHaveText(/^\$\d+\.\d\d at your prices$/);
	expect(Number((await cost.textContent())!.match(/\$([\d.]+)/)![1])).toBeGreaterThanOrEqual(0.08);
	// This session's row in the ranked table: its tokens and cost.
	const row = page.locator(`[data-testid="review-session-row"][data-session-id="${sessionId}"]`);
	await expect(row.getByTestId('session-tokens')).toContainText('127k');
	await expect(row.getByTestId('session-cost')).toHaveText('$0.08');
	await row.screenshot({ path: test.info().outputPath('review-row-tokens.png') });
	await expect(page.getByTestId('chart-tokens')).toBeVisible();
	await page.getByTestId('chart-tokens').scrollIntoViewIfNeeded();
	await page.screenshot({ path: test.info().outputPath('review-tokens.png') });
});

test('a turn over the token budget stops before its next model call, says so in the chat, and a message goes on', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{ toolCalls: [{ name: 'search_knowledge', args: { query: 'everything' } }], usage: { promptTokens: 1_150_000, completionTokens: 50_000, cachedTokens: 0 } },
		{ text: 'Short version: nothing else to read.' }
	);
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('Read the whole knowledge base');
	await page.getByTestId('send').click();
	const reply = page.locator('[data-testid="message"][data-role="assistant"]');
	await expect(reply).toHaveAttribute('data-status', 'complete');
	const note = reply.getByTestId('note').filter({ hasText: 'Stopped' });
	await expect(note).toHaveText('Stopped: this turn used 1.2M tokens, over the 1M budget (NOMOS_TURN_TOKEN_BUDGET). Send a message to go on.');
	await expect(reply).not.toContainText('Short version: nothing else to read.');
	await reply.screenshot({ path: test.info().outputPath('budget-note.png') });

	// The next message is a new turn with its own budget (the unused script step answers it).
	await page.getByTestId('composer-input').fill('Go on, briefly');
	await page.getByTestId('send').click();
	await expect(reply.nth(1)).toHaveAttribute('data-status', 'complete');
	await expect(reply.nth(1)).toContainText('Short version: nothing else to read.');
});
