import { login, test, expect } from './harness/fixtures';

const uuid = () => crypto.randomUUID();

test('a token created in Settings works from Node without a cookie or Origin, read is capped, revoked gets 401', async ({ page, env }) => {
	await login(page, env.admin);
	await page.goto('/settings');
	const section = page.getByTestId('api-tokens-section');
	await section.getByTestId('token-name').fill('script');
	await section.getByTestId('token-scope').selectOption('operate');
	await section.getByTestId('token-expiry').selectOption('7');
	await section.getByTestId('token-password').fill(env.admin.password);
	await section.getByTestId('token-create').click();
	const token = (await section.getByTestId('token-value').textContent())!.trim();
	expect(token).toMatch(/^nomos_pat_/);
	await expect(section.getByTestId('token-row').filter({ hasText: 'script' })).toContainText('operate');
	await section.getByTestId('token-name').fill('reader');
	await section.getByTestId('token-scope').selectOption('read');
	await section.getByTestId('token-password').fill(env.admin.password);
	await section.getByTestId('token-create').click();
	await expect(section.getByTestId('token-created')).toContainText('reader');
	await expect(section.getByTestId('token-row').filter({ hasText: 'reader' })).toContainText('read ·');
	const reader = (await section.getByTestId('token-value').textContent())!.trim();
	await section.screenshot({ path: 'test-results/api-tokens-settings.png' });

	// From Node, as curl would: no cookie, no Origin.
	const api = (path: string, init: RequestInit & { bearer?: string } = {}) =>
		fetch(env.baseURL + path, {
			...init,
			headers: { ...(init.bearer ? { authorization: `Bearer ${init.bearer}` } : {}), ...(init.headers as Record<string, string>) }
		});
	const post = (path: string, body: unknown, bearer?: string) =>
		api(path, { method: 'POST', bearer, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

	const recent = await api('/trpc/executions.recent', { bearer: token });
	expect(recent.status).toBe(200);
	// A mutation passes the guard; zod answers naming the field.
	const bad = await post('/trpc/executions.decide', { executionId: 'nope', decision: 'approved' }, token);
	expect(bad.status).toBe(400);
	expect((await bad.json()).error.message).toContain('executionId:');
	// The REST answer: 400 names the field, an unknown question is 404 (past auth and origin).
	const answer = `/sessions/${uuid()}/questions/${uuid()}/answer`;
	const empty = await post(answer, { answer: '  ' }, token);
	expect(empty.status).toBe(400);
	expect((await empty.json()).message).toBe('answer: The answer is empty.');
	expect((await post(answer, { answer: 'yes' }, token)).status).toBe(404);
	// The live stream takes the token.
	const ctrl = new AbortController();
	const stream = await api('/api/events', { bearer: reader, signal: ctrl.signal });
	expect(stream.status).toBe(200);
	expect(stream.headers.get('content-type')).toContain('text/event-stream');
	ctrl.abort();

	// Read: queries yes, changes no (403 with the reason).
	expect((await api('/trpc/executions.recent', { bearer: reader })).status).toBe(200);
	const refused = await post(answer, { answer: 'yes' }, reader);
	expect(refused.status).toBe(403);
	expect((await refused.json()).message).toContain('scope read');

	// No credentials: 401, not 403.
	const none = await post(answer, { answer: 'yes' });
	expect(none.status).toBe(401);
	expect((await api('/trpc/executions.recent')).status).toBe(401);
	// The browser's cookie without Origin is still refused.
	const cookies = await page.context().cookies();
	const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
	const withCookie = await api(answer, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: '{"answer":"yes"}' });
	expect(withCookie.status).toBe(403);

	// Last used shows; revoking ends the token.
	await page.reload();
	await expect(section.getByTestId('token-row').filter({ hasText: 'script' }).getByTestId('token-meta')).not.toContainText('last used never');
	await section.getByTestId('token-row').filter({ hasText: 'script' }).getByTestId('token-revoke').click();
	await expect(section.getByTestId('token-row').filter({ hasText: 'script' })).toHaveCount(0);
	expect((await api('/trpc/executions.recent', { bearer: token })).status).toBe(401);
});
