import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

test('a new chat streams the reply and appears in the sidebar', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push({ text: 'Your fleet has **three** containers.', chunkSize: 4, delayMs: 40 });
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('How many containers do I have?');
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
	const reply = page.locator('[data-testid="message"][data-role="assistant"]');
	await expect(reply).toContainText('Your fleet has three containers.');
	await expect(reply).toHaveAttribute('data-status', 'complete');
	await expect(reply.locator('strong')).toHaveText('three');
	await expect(page.getByTestId('session-link').first()).toContainText('How many containers do I have?');
});

test('an empty completion shows the retries, then a message that says what went wrong', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push({ fault: 'empty' }, { fault: 'empty' }, { fault: 'empty' });
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('Say nothing');
	await page.getByTestId('send').click();
	const reply = page.locator('[data-testid="message"][data-role="assistant"]');
	await expect(reply.locator('[data-kind="retry"]').first()).toContainText('An empty reply; retrying without streaming (attempt 2 of 3)');
	await expect(reply).toContainText('The model returned nothing 3 times (an empty reply)');
	await expect(reply).toHaveAttribute('data-status', 'error');
	expect((await llm.requests()).length).toBe(3);
});

test('a message sent while a turn runs is queued and answered next; Stop keeps partial output', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{ text: 'This is a slow answer that the operator will stop before it finishes streaming.', chunkSize: 2, delayMs: 200 },
		{ text: 'Answer to the second question.' }
	);
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('First question');
	await page.getByTestId('send').click();
	const assistant = page.locator('[data-testid="message"][data-role="assistant"]');
	await expect(assistant.first()).toContainText('This is a slow');
	await page.getByTestId('composer-input').fill('Second question');
	await page.getByTestId('send').click();
	await expect(page.locator('[data-testid="message"][data-role="user"]').nth(1).getByTestId('queued')).toBeVisible();
	await page.getByTestId('stop').click();
	await expect(assistant.first()).toHaveAttribute('data-status', 'cancelled');
	await expect(assistant.first().locator('[data-kind="cancelled"]')).toBeVisible();
	await expect(assistant.nth(1)).toContainText('Answer to the second question.');
	await expect(page.getByTestId('queued')).toHaveCount(0);
	// The second turn's request replayed the first, partial answer and both questions.
	const reqs = await llm.requests();
	const last = reqs[reqs.length - 1].body as { messages: Array<{ role: string; content: unknown }> };
	expect(JSON.stringify(last.messages)).toContain('First question');
	expect(last.messages.at(-1)).toMatchObject({ role: 'user', content: 'Second question' });
});

test('switching sessions in the sidebar shows the other session, and it stays live', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push({ text: 'The first answer.' }, { text: 'The second answer.' }, { text: 'Back in the first.' });
	await login(page, env.admin);
	const messages = page.getByTestId('message');
	await page.getByTestId('composer-input').fill('Switch test: first question');
	await page.getByTestId('send').click();
	await expect(messages.last()).toContainText('The first answer.');
	const first = page.url();

	await page.getByTestId('new-chat').click();
	// The new chat's page is shown (on a busy machine, text typed before it is typed into the old one).
	await expect(page.getByRole('heading', { name: 'What should Nomos do?' })).toBeVisible();
	await page.getByTestId('composer-input').fill('Switch test: second question');
	await page.getByTestId('send').click();
	await expect(messages.last()).toContainText('The second answer.');
	await expect(messages).toHaveCount(2);

	await page.getByTestId('session-link').filter({ hasText: 'Switch test: first question' }).click();
	await expect(page).toHaveURL(first);
	await expect(messages).toHaveCount(2);
	await expect(messages.first()).toContainText('Switch test: first question');
	await expect(messages.last()).toContainText('The first answer.');
	await expect(page.getByTestId('chat-page')).not.toContainText('The second answer.');

	// The stream now follows the first session: a new reply arrives live.
	await page.getByTestId('composer-input').fill('and again');
	await page.getByTestId('send').click();
	await expect(messages.last()).toContainText('Back in the first.');
	await expect(messages).toHaveCount(4);
});
