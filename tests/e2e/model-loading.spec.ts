// A cold model load: the server says nothing for a while; the chat shows a live "the model is
// loading" row instead of asking again, and settles it when the answer comes.
import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';

test('no byte from the model: a live "model is loading" row, then the answer, one request', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	try {
		await llm.push({ text: 'Ready now.', loadMs: 6000 }, { text: 'a retry would get this' });
		await login(page, env.admin);
		await page.getByTestId('composer-input').fill('Are you there?');
		await page.getByTestId('send').click();
		const reply = page.locator('[data-testid="message"][data-role="assistant"]').last();
		const loading = reply.locator('[data-testid="note"][data-kind="loading"]');
		await expect(loading).toHaveAttribute('data-pending', 'true', { timeout: 15_000 });
		await expect(loading).toHaveText(/^The model is loading \(no answer for 2 s\); waiting for it rather than asking again…$/);
		await expect(reply).toHaveAttribute('data-status', 'streaming');
		expect((await llm.requests()).length).toBe(1);

		await expect(reply).toHaveAttribute('data-status', 'complete', { timeout: 20_000 });
		await expect(reply.getByTestId('message-text')).toHaveText('Ready now.');
		await expect(loading).toHaveAttribute('data-pending', 'false');
		await expect(loading).toHaveText('The model is loading (no answer for 2 s); waiting for it rather than asking again');
		expect((await llm.requests()).length).toBe(1);
	} finally {
		await llm.reset();
	}
});
