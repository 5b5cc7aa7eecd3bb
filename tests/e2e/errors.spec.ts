import { login, test, expect } from './harness/fixtures';

test('a missing page shows the app’s error page, with a link home', async ({ page, env }) => {
	await login(page, env.operator);
	const res = await page.goto('/no-such-page');
	expect(res?.status()).toBe(404);
	const error = page.getByTestId('error-page');
	await expect(error.getByRole('heading', { name: 'This page does not exist' })).toBeVisible();
	await expect(error.getByTestId('error-status')).toHaveText('Error 404');
	await expect(page).toHaveTitle('This page does not exist · Nomos');
	await page.screenshot({ path: 'test-results/error-404.png', fullPage: true });
	await error.getByRole('link', { name: 'Go home' }).click();
	await expect(page.getByTestId('home')).toBeVisible();
});

test('an error inside the app keeps the sidebar, on a full load and after a client-side navigation', async ({ page, env }) => {
	await login(page, env.operator);
	const missing = '/chat/00000000-0000-4000-8000-000000000000';
	const res = await page.goto(missing);
	expect(res?.status()).toBe(404);
	const error = page.getByTestId('error-page');
	await expect(error.getByRole('heading', { name: 'This page does not exist' })).toBeVisible();
	await expect(error.getByTestId('error-message')).toHaveText('No such chat session.');
	await expect(page.getByTestId('sidebar')).toBeVisible();
	await page.screenshot({ path: 'test-results/error-404-in-app.png', fullPage: true });

	// The same error reached by a link, without a page load.
	await error.getByRole('link', { name: 'Go home' }).click();
	await expect(page.getByTestId('home')).toBeVisible();
	await page.evaluate((href) => {
		const a = Object.assign(document.createElement('a'), { href });
		document.body.append(a);
		a.click();
	}, missing);
	await expect(page.getByTestId('error-message')).toHaveText('No such chat session.');
	await expect(page.getByTestId('sidebar')).toBeVisible();
});

test('an admin page, for a plain operator, says access is refused, with a link home', async ({ page, env }) => {
	await login(page, env.operator);
	await page.emulateMedia({ colorScheme: 'dark' });
	const res = await page.goto('/admin/audit');
	expect(res?.status()).toBe(403);
	const error = page.getByTestId('error-page');
	await expect(error.getByRole('heading', { name: 'You do not have access to this page' })).toBeVisible();
	await expect(error.getByTestId('error-status')).toHaveText('Error 403');
	await expect(error.getByTestId('error-message')).toHaveText('Admins only.');
	await page.screenshot({ path: 'test-results/error-403-dark.png', fullPage: true });
	await error.getByRole('link', { name: 'Go home' }).click();
	await expect(page.getByTestId('home')).toBeVisible();
});
