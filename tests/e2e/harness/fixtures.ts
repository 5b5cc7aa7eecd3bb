import { test as base, expect, type Page } from '@playwright/test';
import postgres from 'postgres';
import { e2eEnv, type E2eEnv } from './env';

export async function login(page: Page, who: { username: string; password: string }) {
	await page.context().clearCookies();
	await page.goto('/login');
	await page.getByLabel('Username').fill(who.username);
	await page.getByLabel('Password').fill(who.password);
	await page.getByRole('button', { name: 'Sign in' }).click();
	await expect(page.getByTestId('sidebar')).toBeVisible();
}

type Fixtures = { env: E2eEnv; sql: postgres.Sql };

export const test = base.extend<Fixtures>({
	// eslint-disable-next-line no-empty-pattern
	env: async ({}, use) => use(e2eEnv()),
	sql: async ({ env }, use) => {
		const sql = postgres(env.databaseUrl, { max: 2, onnotice: () => undefined });
		await use(sql);
		await sql.end();
	}
});

export { expect };
