import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

/** Plain paragraphs (no inline markup until the last one), so text so far reads the same in the DOM as in the store. */
function longReply(): string {
	const paras = Array.from(
		{ length: 40 },
		(_, i) => `Paragraph ${i + 1}: container ${100 + i} runs a service that answers on port ${8000 + i}, and its backup finished without errors last night.`
	);
	return `${paras.join('\n\n')}\n\nThat is **all** of it.`;
}

const norm = (s: string) => s.replace(/\*\*/g, '').replace(/\s+/g, ' ').trim();

test('a long reply streams in; a reload mid-turn shows the text so far and goes on; the page ends with the stored message', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.push({ text: longReply(), chunkSize: 16, delayMs: 12 });
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('Tell me about every container');
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
	const reply = page.locator('[data-testid="message"][data-role="assistant"]');
	const text = reply.getByTestId('message-text');
	await expect(text).toContainText('Paragraph 8:');
	await expect(reply).toHaveAttribute('data-status', 'streaming');
	const seen = norm(await text.innerText());

	await page.reload();
	// At once, from the page load: the message as far as it had gone, still streaming…
	await expect(reply).toHaveAttribute('data-status', 'streaming');
	const atLoad = norm(await text.innerText());
	expect(atLoad.startsWith(seen.slice(0, -20))).toBe(true);
	expect(atLoad.length).toBeGreaterThanOrEqual(seen.length - 20);
	// …and it goes on over the live stream to the end.
	await expect(reply).toHaveAttribute('data-status', 'complete', { timeout: scaled(30_000) });
	await expect(text).toContainText('That is all of it.');

	const [row] = await sql<{ parts: Array<{ type: string; text?: string }> }[]>`
		select parts from messages where role = 'assistant' and session_id = ${page.url().split('/').pop()!}`;
	const stored = row.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
	expect(norm(stored)).toBe(norm(longReply()));
	expect(norm(await text.innerText())).toBe(norm(stored));
	expect(await reply.getByTestId('message-text').count()).toBe(1);
});
