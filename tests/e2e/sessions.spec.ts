import { readFile } from 'node:fs/promises';
import type { Page, TestInfo } from '@playwright/test';
import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

async function shoot(page: Page, info: TestInfo, name: string) {
	const file = info.outputPath(`${name}.png`);
	await page.screenshot({ path: file });
	await info.attach(name, { path: file, contentType: 'image/png' });
}

for (const width of [1280, 390]) {
	test.describe(`at ${width} px`, () => {
		test.use({ viewport: { width, height: width > 800 ? 800 : 844 } });
		const phone = width < 768;
		/** The sidebar: the drawer is opened first on a phone. */
		async function sidebar(page: Page) {
			if (phone && (await page.getByTestId('sidebar').getAttribute('data-open')) !== 'true') await page.getByTestId('menu-button').click();
			return page.getByTestId('sidebar');
		}

		test('rename, agent title, search with /, pin, archive and unarchive, export, delete', async ({ page, env }) => {
			const llm = llmControl(env.llmURL);
			const marker = `zq${width}x${Date.now().toString(36)}`;
			await llm.push({ text: `The grafana panel ${marker} loads slowly because of the disk.` });
			if (phone) {
				await page.goto('/login');
				await page.getByLabel('Username').fill(env.admin.username);
				await page.getByLabel('Password').fill(env.admin.password);
				await page.getByRole('button', { name: 'Sign in' }).click();
			} else await login(page, env.admin);
			await expect(page.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');
			await page.getByTestId('composer-input').fill(`Why is grafana slow (${width})?`);
			await page.getByTestId('send').click();
			await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
			const id = page.url().split('/').at(-1)!;
			await expect(page.locator('[data-testid="message"][data-role="assistant"]')).toHaveAttribute('data-status', 'complete');

			// The agent's title replaces the first message's words, live in the header.
			await expect(page.getByTestId('session-title')).toHaveText(`About: Why is grafana slow (${width})?`);
			expect((await llm.titleRequests()).length).toBe(1);

			// Rename in the header.
			await page.getByTestId('session-title').click();
			await page.getByTestId('title-input').fill(`Grafana ${width}`);
			await page.getByTestId('title-input').press('Enter');
			await expect(page.getByTestId('session-title')).toHaveText(`Grafana ${width}`);
			let item = (await sidebar(page)).locator(`[data-session-id="${id}"]`);
			await expect(item).toContainText(`Grafana ${width}`);

			// Rename from the sidebar item's menu, then pin it.
			await item.getByTestId('session-menu').click();
			await page.getByTestId('session-rename').click();
			await (await sidebar(page)).getByTestId('title-input').fill(`Grafana slowness ${width}`);
			await (await sidebar(page)).getByTestId('title-input').press('Enter');
			item = (await sidebar(page)).locator(`[data-session-id="${id}"]`);
			await expect(item).toContainText(`Grafana slowness ${width}`);
			await item.getByTestId('session-menu').click();
			await page.getByTestId('session-pin').click();
			await expect(item).toHaveAttribute('data-pinned', 'true');
			await expect((await sidebar(page)).getByTestId('session-item').first()).toHaveAttribute('data-session-id', id);
			if (phone) await page.getByTestId('drawer-close').click();
			await expect(page.getByTestId('session-title')).toHaveText(`Grafana slowness ${width}`);

			// `/` focuses the search box (not while typing in a field); a hit links to its message.
			await page.getByTestId('composer-input').focus();
			await page.keyboard.press('/');
			await expect(page.getByTestId('composer-input')).toHaveValue('/');
			await page.getByTestId('composer-input').fill('');
			await page.locator('body').click({ position: { x: 5, y: 5 } });
			await page.keyboard.press('/');
			await expect(page.getByTestId('session-search')).toBeFocused();
			await page.keyboard.type(marker);
			const hit = page.getByTestId('search-hit').first();
			await expect(hit).toContainText(`Grafana slowness ${width}`);
			await expect(hit.locator('mark')).toHaveText(marker);
			await shoot(page, test.info(), `search-${width}`);
			await hit.click();
			await expect(page).toHaveURL(new RegExp(`/chat/${id}#message-`));
			await expect(page.locator('[data-testid="message-anchor"][data-target="true"]')).toContainText(marker);
			if (phone && (await page.getByTestId('sidebar').getAttribute('data-open')) === 'true') await page.getByTestId('drawer-close').click();

			// Export from the header menu (Markdown and JSON).
			await page.getByTestId('chat-page').getByTestId('session-menu').click();
			await shoot(page, test.info(), `menu-${width}`);
			const [md] = await Promise.all([page.waitForEvent('download'), page.getByTestId('session-export-md').click()]);
			const text = await readFile(await md.path(), 'utf8');
			expect(text).toContain(`# Grafana slowness ${width}`);
			expect(text).toContain(marker);
			await page.getByTestId('chat-page').getByTestId('session-menu').click();
			const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('session-export-json').click()]);
			const body = JSON.parse(await readFile(await json.path(), 'utf8')) as { messages: Array<{ role: string }> };
			expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant']);

			// Archive: gone from the list, in the Archived view (and still found, marked); unarchive brings it back.
			await page.getByTestId('chat-page').getByTestId('session-menu').click();
			await page.getByTestId('session-archive').click();
			await expect(page.getByTestId('session-archived')).toBeVisible();
			const bar = await sidebar(page);
			await bar.getByTestId('session-search').fill('');
			await expect(bar.locator(`[data-session-id="${id}"]`)).toHaveCount(0);
			await bar.getByTestId('archived-toggle').click();
			await expect(bar.getByTestId('session-list-label')).toHaveText('Archived');
			const archived = bar.locator(`[data-session-id="${id}"]`);
			await expect(archived).toBeVisible();
			await shoot(page, test.info(), `archived-${width}`);
			await archived.getByTestId('session-menu').click();
			await page.getByTestId('session-archive').click();
			await expect(archived).toHaveCount(0);
			await bar.getByTestId('archived-toggle').click();
			await expect(bar.locator(`[data-session-id="${id}"]`)).toBeVisible();

			// Delete, confirmed: the chat is gone and the app goes home.
			await page.goto(`/chat/${id}`);
			await page.getByTestId('chat-page').getByTestId('session-menu').click();
			await page.getByTestId('session-delete').click();
			await expect(page.getByTestId('session-dialog')).toContainText('Delete “Grafana slowness');
			await shoot(page, test.info(), `delete-${width}`);
			await page.getByTestId('session-delete-confirm').click();
			await expect(page).toHaveURL(/\/$/);
			await expect((await sidebar(page)).locator(`[data-session-id="${id}"]`)).toHaveCount(0);
			expect((await page.goto(`/chat/${id}`))?.status()).toBe(404);
		});
	});
}
