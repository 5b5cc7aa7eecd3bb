// An admin checks the model server from Settings: its listing, context, prompt cache and four tool-call probes.
import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';

test('Settings → Check the model lists, measures and probes the configured model', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	await llm.dialect('ollama');
	try {
		await llm.push(
			{ toolCalls: [{ name: 'echo', args: { word: 'ping' } }] },
			{
				toolCalls: [
					{ name: 'echo', args: { word: 'alpha' } },
					{ name: 'echo', args: { word: 'beta' } }
				]
			},
			{ toolCalls: [{ name: 'echo', args: { word: 'ping' } }] },
			{
				toolCalls: [
					{ name: 'echo', args: { word: 'alpha' } },
					{ name: 'echo', args: { word: 'beta' } }
				]
			}
		);
		await login(page, env.admin);
		await page.goto('/settings');
		await page.getByTestId('check-model').click();
		const check = page.getByTestId('model-check');
		await expect(check.getByTestId('model-listed')).toHaveText('Listed among the 1 models it serves.');
		await expect(check.getByTestId('model-context')).toHaveText(
			"Context: 4096 tokens (Ollama's default for its OpenAI endpoint); the model was trained for 32768."
		);
		await expect(check.getByTestId('model-cache')).toHaveAttribute('data-caches', 'true');
		await expect(check.getByTestId('model-cache')).toContainText("Prompt cache: yes — Ollama keeps the loaded model's KV cache");
		await expect(check.locator('[data-testid="model-probe"][data-ok="true"]')).toHaveCount(4);
		await expect(check.getByTestId('model-probe').nth(1)).toContainText('2 tool calls');
		await page.getByTestId('model-section').screenshot({ path: 'test-results/model-check.png' });
	} finally {
		await llm.reset();
	}
});
