// Sessions belong to their operator (issue #43 item 3), in two browsers: B's sidebar does not list
// A's chat and A's chat URL is a 404 for B; once A shares it read-only, B lists and reads it,
// without a composer or rename, and the server refuses B's message.
import { hashPassword } from '../../src/lib/server/auth/password';
import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';

test('B does not see A’s chat until A shares it read-only; then B reads it and cannot write', async ({ browser, page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	const bob = { username: `bea${Date.now().toString(36)}`, password: 'beas long password' };
	await sql`insert into operators (username, password_hash, role) values (${bob.username}, ${await hashPassword(bob.password)}, 'operator')`;
	const marker = `own${Date.now().toString(36)}`;
	await llm.push(
		{
			toolCalls: [
				{ name: 'request_execution', args: { target: 'lxc:strong/100', action: 'systemctl', params: { unit: 'nginx', op: 'reload' }, reason: marker } }
			]
		},
		{ text: `Noted: ${marker}.` }
	);

	// A (the harness's plain operator) starts a chat.
	await login(page, env.operator);
	await expect(page.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');
	await page.getByTestId('composer-input').fill(`Remember ${marker}`);
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
	const url = new URL(page.url()).pathname;
	await expect(page.getByTestId('messages')).toContainText(`Noted: ${marker}.`);
	const card = (p: typeof page) => p.getByTestId('execution-card').filter({ hasText: marker });
	await expect(card(page).getByTestId('deny')).toBeVisible();

	// B, in a second browser: not in the sidebar, and the URL is "not yours".
	const other = await browser.newContext();
	const b = await other.newPage();
	await login(b, bob);
	await expect(b.getByTestId('sidebar')).not.toContainText(marker);
	const res = await b.goto(url);
	expect(res?.status()).toBe(404);
	await expect(b.getByTestId('error-message')).toContainText('not yours');
	await expect(b.getByTestId('messages')).toHaveCount(0);
	const exported = await b.request.get(`/api/sessions/${url.split('/').at(-1)}/export?format=md`);
	expect(exported.status()).toBe(404);

	// A shares it read-only from the header menu.
	await page.getByTestId('chat-page').getByTestId('session-menu').click();
	await page.getByTestId('session-share-read').click();
	await expect(page.getByTestId('session-shared')).toHaveText('shared read-only');

	// B now lists it (marked as A's, read-only) and reads it: no composer, no rename, a notice.
	await b.goto('/');
	const link = b.getByTestId('sidebar').getByTestId('session-link').filter({ hasText: marker });
	await expect(link).toBeVisible();
	await expect(link.getByTestId('session-owner')).toHaveText(`${env.operator.username}’s · read-only`);
	await link.click();
	await expect(b).toHaveURL(url);
	await expect(b.getByTestId('messages')).toContainText(`Noted: ${marker}.`);
	await expect(b.getByTestId('read-only-notice')).toBeVisible();
	await expect(b.getByTestId('composer-input')).toHaveCount(0);
	// The agent's request is shown, and nothing on it acts: it is its owner's to decide.
	await expect(card(b).getByTestId('read-only-card')).toBeVisible();
	await expect(card(b).getByTestId('approve')).toHaveCount(0);
	await expect(card(b).getByTestId('deny')).toHaveCount(0);
	await expect(card(b).getByTestId('edit')).toHaveCount(0);
	await expect(b.getByTestId('chat-page').getByTestId('session-owner')).toHaveText(`${env.operator.username}’s · read-only`);
	await b.getByTestId('chat-page').getByTestId('session-menu').click();
	await expect(b.getByTestId('session-rename')).toHaveCount(0);
	await expect(b.getByTestId('session-delete')).toHaveCount(0);
	await expect(b.getByTestId('session-export-md')).toBeVisible();
	await b.keyboard.press('Escape');
	await b.screenshot({ path: 'test-results/owners-read-only.png', fullPage: true });

	// And the server refuses what the page does not offer.
	const send = await b.request.post('/trpc/chat.send', {
		data: { sessionId: url.split('/').at(-1), text: 'let me in', shownExecutionIds: [] },
		headers: { origin: env.baseURL }
	});
	expect(send.status()).toBe(403);
	await other.close();
	// A, the owner, still decides it (and leaves nothing pending for the next spec).
	await card(page).getByTestId('deny').click();
	await card(page).getByTestId('confirm-deny').click();
	await expect(card(page)).toHaveAttribute('data-status', 'denied');
});
