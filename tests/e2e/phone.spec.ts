import type postgres from 'postgres';
import type { Page, TestInfo } from '@playwright/test';
import { llmControl } from '../doubles/llm/client';
import { insertFailedSessionFixture, insertHealthySessionFixture, insertNudgedSessionFixture } from '../helpers/review-fixture';
import { test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

const PHONE = { width: 390, height: 844 };
test.use({ viewport: PHONE, hasTouch: true, isMobile: true });

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

/** Signs in on a phone: the sidebar is a closed drawer there, so the shell is what shows up. */
async function phoneLogin(page: Page, who: { username: string; password: string }) {
	await page.context().clearCookies();
	await page.goto('/login');
	await shoot(page, test.info(), 'login');
	await expectFits(page);
	await page.getByLabel('Username').fill(who.username);
	await page.getByLabel('Password').fill(who.password);
	await page.getByRole('button', { name: 'Sign in' }).click();
	// The shell is server-rendered: wait until the app runs in the page (its live stream is open),
	// or a tap on the menu lands before hydration and opens nothing (seen once in CI under load).
	await expect(page.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');
}

/** A viewport screenshot kept with the test's results (look at them: test-results/…/*.png). */
async function shoot(page: Page, info: TestInfo, name: string) {
	const file = info.outputPath(`${name}.png`);
	await page.screenshot({ path: file });
	await info.attach(name, { path: file, contentType: 'image/png' });
}

/**
 * No page-level sideways scroll, and nothing else scrolls sideways either except what is meant
 * to scroll inside itself (code, tables, long output).
 */
async function expectFits(page: Page) {
	const found = await page.evaluate(() => {
		const offenders: string[] = [];
		const doc = document.documentElement;
		if (doc.scrollWidth > innerWidth) offenders.push(`document ${doc.scrollWidth} > ${innerWidth}`);
		for (const el of document.querySelectorAll<HTMLElement>('body *')) {
			// Code, long output and tables scroll inside themselves (a table through its wrapper).
			if (el.closest('pre, table, textarea')) continue;
			if (el.children.length === 1 && el.firstElementChild!.tagName === 'TABLE') continue;
			const style = getComputedStyle(el);
			if (!['auto', 'scroll'].includes(style.overflowX)) continue;
			if (el.scrollWidth > el.clientWidth + 1)
				offenders.push(`${el.tagName.toLowerCase()}.${el.className} scrolls sideways: ${el.scrollWidth} > ${el.clientWidth}`);
		}
		return offenders;
	});
	expect(found).toEqual([]);
}

/**
 * Every part of the element is on screen horizontally: inside the viewport and not cut off by an
 * ancestor that clips (a scroll container or overflow hidden).
 */
async function expectInsideWidth(page: Page, selector: ReturnType<Page['locator']>) {
	const width = page.viewportSize()!.width;
	for (const el of await selector.all()) {
		const box = (await el.boundingBox())!;
		expect(box, await el.evaluate((n) => n.outerHTML.slice(0, 120))).toBeTruthy();
		expect(box.x).toBeGreaterThanOrEqual(0);
		expect(box.x + box.width).toBeLessThanOrEqual(width);
		const clippedBy = await el.evaluate((n) => {
			const r = n.getBoundingClientRect();
			for (let a = n.parentElement; a; a = a.parentElement) {
				if (getComputedStyle(a).overflowX === 'visible') continue;
				const c = a.getBoundingClientRect();
				const right = c.left + a.clientLeft + a.clientWidth;
				if (r.left < c.left - 0.5 || r.right > right + 0.5) return `${a.tagName.toLowerCase()}.${a.className}`;
			}
			return null;
		});
		expect(clippedBy, await el.evaluate((n) => n.outerHTML.slice(0, 120))).toBeNull();
	}
}

/** The Send button is wholly inside the viewport. */
async function expectSendVisible(page: Page) {
	const send = page.getByTestId('send');
	await expect(send).toBeVisible();
	const box = (await send.boundingBox())!;
	const vp = page.viewportSize()!;
	expect(box.x).toBeGreaterThanOrEqual(0);
	expect(box.y).toBeGreaterThanOrEqual(0);
	expect(box.x + box.width).toBeLessThanOrEqual(vp.width);
	expect(box.y + box.height).toBeLessThanOrEqual(vp.height);
	await expect(send).toHaveText('Send');
	// Nothing clips or covers it: the button itself is what a tap near either edge lands on.
	for (const x of [box.x + 2, box.x + box.width - 2]) {
		const hit = await page.evaluate(([px, py]) => document.elementFromPoint(px, py)?.closest('[data-testid="send"]') !== null, [x, box.y + box.height / 2]);
		expect(hit, `Send at x=${x}`).toBe(true);
	}
}

async function startChat(page: Page, text: string) {
	await page.getByTestId('composer-input').fill(text);
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
}

const LONG_ARGV = ['echo', 'phone-layout-check:' + 'a-rather-long-argument-without-spaces-'.repeat(4) + 'end'];
const CODE_REPLY =
	'Here is what I will run:\n\n```sh\npct exec 100 -- echo ' +
	'a-long-line-of-code-that-does-not-fit-on-a-phone-'.repeat(3) +
	'\n```\n\nApprove the card below when ready.';

test('the drawer opens from the menu button and closes on Escape, the backdrop, its button and navigation', async ({ page, env }) => {
	await phoneLogin(page, env.admin);
	const sidebar = page.getByTestId('sidebar');
	const menu = page.getByTestId('menu-button');
	await expect(sidebar).toBeHidden();
	await expect(menu).toHaveAttribute('aria-expanded', 'false');
	await expectSendVisible(page);
	await expectFits(page);
	await shoot(page, test.info(), 'home');

	await menu.click();
	await expect(sidebar).toBeVisible();
	await expect(menu).toHaveAttribute('aria-expanded', 'true');
	await expect(page.getByTestId('drawer-close')).toBeFocused();
	// It slides in from the left edge and ends inside the screen, leaving a strip of backdrop.
	await expect.poll(async () => (await sidebar.boundingBox())!.x).toBe(0);
	await expectInsideWidth(page, sidebar);
	expect((await sidebar.boundingBox())!.width).toBeLessThan(PHONE.width);
	await shoot(page, test.info(), 'drawer-open');
	await page.keyboard.press('Escape');
	await expect(sidebar).toBeHidden();
	await expect(menu).toBeFocused();

	await menu.click();
	await expect(sidebar).toBeVisible();
	// The backdrop covers what the drawer leaves of the page; a tap there closes it.
	await page.getByTestId('drawer-backdrop').click({ position: { x: PHONE.width - 20, y: PHONE.height / 2 } });
	await expect(sidebar).toBeHidden();
	await expect(menu).toBeFocused();

	await menu.click();
	await page.getByTestId('drawer-close').click();
	await expect(sidebar).toBeHidden();

	await menu.click();
	await sidebar.getByRole('link', { name: 'Ops', exact: true }).click();
	await expect(page).toHaveURL(/\/ops$/);
	await expect(sidebar).toBeHidden();
	await expect(page.getByTestId('ops-page')).toBeVisible();

	// From md up the sidebar is the old column again, with no menu button.
	await page.setViewportSize({ width: 1280, height: 800 });
	await expect(sidebar).toBeVisible();
	await expect(menu).toBeHidden();
	expect((await sidebar.boundingBox())!.width).toBe(256);
});

test('chat on a phone: the reply, its code block and the approval card fit; approving runs it', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{
					name: 'request_execution',
					args: { target: 'lxc:strong/100', action: 'pct_exec', params: { argv: LONG_ARGV }, reason: 'check how a long command looks on a phone' }
				}
			]
		},
		{ text: CODE_REPLY },
		{ text: 'Done: the long echo ran on caddy.' }
	);
	await phoneLogin(page, env.admin);
	await startChat(page, 'run a long echo on caddy, I am on my phone');
	const card = page.getByTestId('execution-card');
	await expect(card).toHaveAttribute('data-status', 'awaiting_approval');
	await expect(page.getByTestId('message').last()).toContainText('Approve the card below when ready.');
	await expect(card.getByTestId('blast-radius')).toBeVisible();

	// The code block scrolls inside itself; the page does not.
	const code = page.locator('[data-testid="message"] .md pre').first();
	expect(await code.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
	await expectInsideWidth(page, code);
	await expectInsideWidth(page, card.getByTestId('command-preview'));
	await expectInsideWidth(page, card.locator('button'));
	await expectInsideWidth(page, card);
	await expectSendVisible(page);
	await expectFits(page);
	await card.scrollIntoViewIfNeeded();
	await shoot(page, test.info(), 'chat-card');

	await card.getByTestId('blast-radius-summary').click();
	await expect(card.getByTestId('blast-radius-details')).toBeVisible();
	await expectInsideWidth(page, card.getByTestId('blast-radius'));
	await expectFits(page);
	await card.getByTestId('blast-radius').scrollIntoViewIfNeeded();
	await shoot(page, test.info(), 'chat-blast-radius');
	await card.getByTestId('blast-radius-summary').click();

	await card.getByTestId('always-allow').click();
	await expect(card.getByTestId('always-allow-form')).toBeVisible();
	await expectInsideWidth(page, card.getByTestId('always-allow-form'));
	await expectFits(page);
	await card.getByTestId('always-allow-form').scrollIntoViewIfNeeded();
	await shoot(page, test.info(), 'chat-always-allow');
	await card.getByTestId('always-allow-form').getByRole('button', { name: 'Cancel' }).click();

	await card.getByTestId('edit').click();
	await expect(card.getByTestId('edit-params')).toBeVisible();
	await expectInsideWidth(page, card.getByTestId('edit-params'));
	await expectFits(page);
	await card.getByTestId('edit-params').scrollIntoViewIfNeeded();
	await shoot(page, test.info(), 'chat-edit');
	await card.getByTestId('edit-cancel').click();

	await card.getByTestId('approve').click();
	await expect(card).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(card.getByTestId('decision')).toContainText('approved by admin via button');
	await expect(page.getByTestId('message').last()).toContainText('Done: the long echo ran on caddy.');
	// The approval opened the assent window: its banner fits in the header.
	const banner = page.getByTestId('assent-window');
	await expect(banner).toBeVisible();
	await expectInsideWidth(page, banner);
	await expectInsideWidth(page, banner.getByTestId('revoke-window'));
	await expectSendVisible(page);
	await expectFits(page);
	await shoot(page, test.info(), 'chat-approved');
	await page.getByTestId('step-output').first().scrollIntoViewIfNeeded();
	await shoot(page, test.info(), 'chat-output');

	// And at 360 px, the narrowest phone we support.
	await page.setViewportSize({ width: 360, height: 740 });
	await expectSendVisible(page);
	await expectInsideWidth(page, banner);
	await expectInsideWidth(page, card);
	await expectFits(page);
	await shoot(page, test.info(), 'chat-360');
});

test('a plan on a phone: its steps, commands and buttons fit', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push({
		text: 'Here is the plan.',
		toolCalls: [
			{
				name: 'propose_plan',
				args: {
					title: 'Check caddy from a phone with a rather long plan title that has to wrap somewhere',
					steps: [
						{ action: 'pct_exec', target: 'lxc:strong/100', params: { argv: LONG_ARGV }, why: 'a long command first' },
						{ action: 'systemctl', target: 'lxc:strong/100', params: { unit: 'caddy.service', op: 'reload' }, why: 'then reload caddy' }
					]
				}
			}
		]
	});
	await phoneLogin(page, env.admin);
	await startChat(page, 'plan a caddy check');
	const plan = page.getByTestId('plan-card');
	await expect(plan.getByTestId('plan-step')).toHaveCount(2);
	await plan.scrollIntoViewIfNeeded();
	await expectInsideWidth(page, plan);
	await expectInsideWidth(page, plan.locator('button, pre'));
	await expectSendVisible(page);
	await expectFits(page);
	await shoot(page, test.info(), 'plan');
});

test('Ops on a phone: the pending card fits and approves; questions are listed', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{
					name: 'request_execution',
					args: { target: 'lxc:strong/100', action: 'pct_exec', params: { argv: ['echo', 'from-ops'] }, reason: 'approve me on Ops' }
				}
			]
		},
		{ text: 'Waiting for your approval on Ops.' },
		{ text: 'It ran.' }
	);
	await phoneLogin(page, env.admin);
	await startChat(page, 'echo something, I will approve on Ops');
	await expect(page.getByTestId('execution-card')).toHaveAttribute('data-status', 'awaiting_approval');
	await page.getByTestId('menu-button').click();
	await page.getByTestId('sidebar').getByRole('link', { name: 'Ops', exact: true }).click();
	// Other specs may leave cards waiting on Ops; this one is ours.
	const pending = page.getByTestId('ops-pending').getByTestId('execution-card').filter({ hasText: 'approve me on Ops' });
	await expect(pending).toHaveCount(1);
	await expectInsideWidth(page, pending.locator('button'));
	await expectFits(page);
	await shoot(page, test.info(), 'ops-pending');
	await pending.getByTestId('approve').click();
	await expect(page.getByTestId('ops-recent').getByTestId('execution-card').first()).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expectFits(page);
	await shoot(page, test.info(), 'ops-done');
	// The agent hears of it by itself (the approval opened the session's window); let that turn end here.
	await expect.poll(async () => (await llm.requests()).length, { timeout: scaled(20_000) }).toBe(3);
});

test('a question on a phone: the panel fits above the composer and its option answers', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{
					name: 'ask_operator',
					args: {
						prompt: 'Which host should run the phone test container?',
						why: 'Both hosts have room and only you know which one you want to keep free.',
						options: ['strong', 'weak', 'neither, wait until next week'],
						context_entities: ['host:strong', 'lxc:strong/100']
					}
				}
			]
		},
		{ text: 'Understood: strong it is.' }
	);
	await phoneLogin(page, env.admin);
	await startChat(page, 'deploy the phone test container');
	const panel = page.getByTestId('question-panel');
	await expect(panel.getByTestId('question-prompt')).toHaveText('Which host should run the phone test container?');
	await expect(page.getByTestId('menu-waiting')).toBeVisible();
	await expectInsideWidth(page, panel);
	await expectInsideWidth(page, panel.locator('button, input'));
	await expectSendVisible(page);
	await expectFits(page);
	await shoot(page, test.info(), 'question');

	await page.goto('/ops');
	const listed = page.getByTestId('ops-question').filter({ hasText: 'Which host should run the phone test container?' });
	await expect(listed).toHaveCount(1);
	await expectInsideWidth(page, listed);
	await expectFits(page);
	await shoot(page, test.info(), 'ops-question');
	await listed.getByRole('link').click();

	await panel
		.getByTestId('question-option')
		.filter({ hasText: /^strong$/ })
		.click();
	await expect(panel).toHaveCount(0);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('Understood: strong it is.');
	await expectFits(page);
	await shoot(page, test.info(), 'question-answered');
});

const REVIEW_TITLE = 'deploy TypeType on strong as LXC';
async function reviewFixture(sql: postgres.Sql): Promise<string> {
	const [found] = await sql<{ id: string }[]>`select id from chat_sessions where title = ${REVIEW_TITLE}`;
	if (found) return found.id;
	await insertHealthySessionFixture(sql);
	await insertNudgedSessionFixture(sql);
	return insertFailedSessionFixture(sql);
}

test('review, audit, knowledge and settings fit on a phone', async ({ page, env, sql }) => {
	const id = await reviewFixture(sql);
	await phoneLogin(page, env.admin);
	await page.getByTestId('menu-button').click();
	await page.getByTestId('sidebar').getByRole('link', { name: 'Review', exact: true }).click();
	await expect(page.getByTestId('review-page')).toBeVisible();
	await expect(page.getByTestId('review-session-row').first()).toHaveAttribute('data-session-id', id);
	await expect(page.getByTestId('chart-findings').locator('canvas')).toBeVisible();
	await expectInsideWidth(page, page.getByTestId('chart-findings'));
	await expectFits(page);
	await shoot(page, test.info(), 'review');
	await page.getByTestId('review-session-row').first().scrollIntoViewIfNeeded();
	await shoot(page, test.info(), 'review-rows');

	await page.goto(`/admin/review/${id}`);
	await expect(page.getByTestId('finding').first()).toBeVisible();
	await expectFits(page);
	await shoot(page, test.info(), 'review-session');
	await page.getByTestId('review-message-row').first().scrollIntoViewIfNeeded();
	await shoot(page, test.info(), 'review-session-messages');

	for (const [path, testid, name] of [
		['/admin/audit', 'audit-page', 'audit'],
		['/knowledge', 'knowledge-page', 'knowledge'],
		['/settings', 'settings-page', 'settings']
	] as const) {
		await page.goto(path);
		await expect(page.getByTestId(testid)).toBeVisible();
		await expectFits(page);
		await shoot(page, test.info(), name);
	}
	// The note editor on a phone (Knowledge → New note).
	await page.goto('/knowledge');
	await page.getByTestId('add-note').click();
	await expect(page.getByRole('button', { name: 'Add note' })).toBeVisible();
	await expectInsideWidth(page, page.getByRole('button', { name: 'Add note' }));
	await expectFits(page);
	await shoot(page, test.info(), 'knowledge-new-note');
});

test('the web app manifest is served, valid, and its icons load', async ({ page, request }) => {
	await page.goto('/login');
	const href = new URL((await page.locator('link[rel="manifest"]').getAttribute('href'))!, page.url()).pathname;
	expect(href).toBe('/manifest.webmanifest');
	await expect(page.locator('meta[name="theme-color"]')).toHaveAttribute('content', /^#[0-9a-f]{6}$/i);
	const res = await request.get(href);
	expect(res.status()).toBe(200);
	expect(res.headers()['content-type']).toMatch(/^application\/manifest\+json/);
	const manifest = JSON.parse(await res.text()) as {
		name: string;
		short_name: string;
		start_url: string;
		display: string;
		theme_color: string;
		background_color: string;
		icons: Array<{ src: string; sizes: string; type: string; purpose?: string }>;
	};
	expect(manifest).toMatchObject({ name: expect.stringContaining('Nomos'), short_name: 'Nomos', start_url: '/', display: 'standalone' });
	expect(manifest.theme_color).toMatch(/^#[0-9a-f]{6}$/i);
	expect(manifest.background_color).toMatch(/^#[0-9a-f]{6}$/i);
	const sizes = (purpose: string) => manifest.icons.filter((i) => (i.purpose ?? 'any').split(' ').includes(purpose)).map((i) => i.sizes);
	expect(sizes('any')).toEqual(expect.arrayContaining(['192x192', '512x512']));
	expect(sizes('maskable').length).toBeGreaterThan(0);

	const appleHref = new URL((await page.locator('link[rel="apple-touch-icon"]').getAttribute('href'))!, page.url()).pathname;
	const icons = [...manifest.icons.map((i) => ({ src: i.src, sizes: i.sizes })), { src: appleHref, sizes: '180x180' }];
	for (const icon of icons) {
		const r = await request.get(new URL(icon.src, res.url()).pathname);
		expect(r.status(), icon.src).toBe(200);
		expect(r.headers()['content-type']).toBe('image/png');
		const png = await r.body();
		expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
		// The IHDR chunk holds width and height right after the signature.
		expect(`${png.readUInt32BE(16)}x${png.readUInt32BE(20)}`).toBe(icon.sizes);
	}
	// The browser decodes them too.
	const decoded = await page.evaluate(
		async (srcs) => {
			return Promise.all(
				srcs.map(
					(src) =>
						new Promise<number>((resolve) => {
							const img = new Image();
							img.onload = () => resolve(img.naturalWidth);
							img.onerror = () => resolve(0);
							img.src = src;
						})
				)
			);
		},
		icons.map((i) => i.src)
	);
	expect(decoded.every((w) => w > 0)).toBe(true);
});
