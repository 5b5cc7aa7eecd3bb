import { login, test, expect } from './harness/fixtures';

test('every page sends a stranger to the login page', async ({ page }) => {
	await page.goto('/settings');
	await expect(page).toHaveURL(/\/login\?next=%2Fsettings/);
	await expect(page.getByRole('heading', { name: 'Sign in to Nomos' })).toBeVisible();
});

test('a wrong password is refused with a readable message', async ({ page, env }) => {
	await page.goto('/login');
	await page.getByLabel('Username').fill(env.admin.username);
	await page.getByLabel('Password').fill('not-the-password');
	await page.getByRole('button', { name: 'Sign in' }).click();
	await expect(page.getByTestId('login-error')).toHaveText('Wrong username or password.');
	await expect(page).toHaveURL(/\/login/);
});

test('login, the cookie is HttpOnly and Lax, logout ends the session', async ({ page, context, env }) => {
	await login(page, env.admin);
	const cookie = (await context.cookies()).find((c) => c.name === 'nomos_session')!;
	expect(cookie.httpOnly).toBe(true);
	expect(cookie.sameSite).toBe('Lax');
	expect(cookie.secure).toBe(false); // plain http on localhost
	await expect(page.getByTestId('current-user')).toHaveText('admin · admin');

	await page.getByTestId('logout').click();
	await expect(page).toHaveURL(/\/login/);
	// The old cookie value no longer works either.
	await context.addCookies([{ ...cookie }]);
	await page.goto('/ops');
	await expect(page).toHaveURL(/\/login/);
});

test('an expired session sends the operator back to login', async ({ page, env, sql }) => {
	await login(page, env.operator);
	await page.goto('/ops');
	await expect(page.getByTestId('ops-page')).toBeVisible();
	await sql`update auth_sessions set expires_at = now() - interval '1 minute'
		where operator_id = (select id from operators where username = ${env.operator.username})`;
	await page.goto('/ops');
	await expect(page).toHaveURL(/\/login\?next=%2Fops/);
});

test('/admin needs role admin', async ({ page, env }) => {
	await login(page, env.operator);
	await expect(page.getByRole('link', { name: 'Review' })).toHaveCount(0);
	const res = await page.goto('/admin/review');
	expect(res?.status()).toBe(403);
	await login(page, env.admin);
	const ok = await page.goto('/admin/review');
	expect(ok?.status()).toBe(200);
	await expect(page.getByTestId('review-page')).toBeVisible();
});

test('live event streams serve only a signed-in operator', async ({ playwright, env }) => {
	const anon = await playwright.request.newContext({ baseURL: env.baseURL });
	expect((await anon.get('/api/events')).status()).toBe(401);
	expect((await anon.get('/api/sessions/00000000-0000-4000-8000-000000000001/events')).status()).toBe(401);
	expect((await anon.get('/trpc/chat.sessions')).status()).toBe(401);
	await anon.dispose();
});
