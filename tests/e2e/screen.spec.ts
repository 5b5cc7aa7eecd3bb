// What the screen says is true and fits (issue #29, items 3–10), measured at 1280, 1024 and 390 px.
import type { Page, TestInfo } from '@playwright/test';
import { llmControl } from '../doubles/llm/client';
import { insertHealthySessionFixture } from '../helpers/review-fixture';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

const DESKTOP = { width: 1280, height: 800 };
const LAPTOP = { width: 1024, height: 768 };
const PHONE = { width: 390, height: 844 };

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

async function shoot(page: Page, info: TestInfo, name: string) {
	const file = info.outputPath(`${name}.png`);
	await page.screenshot({ path: file, fullPage: true });
	await info.attach(name, { path: file, contentType: 'image/png' });
}

/** Signs in at the desktop size (the sidebar is visible there), then takes the size asked for. */
async function signIn(page: Page, who: { username: string; password: string }, size = DESKTOP) {
	await page.setViewportSize(DESKTOP);
	await login(page, who);
	await page.setViewportSize(size);
}

/** The element shows all its text: nothing inside it is cut (no ellipsis, no clipped overflow). */
async function expectNotCut(loc: ReturnType<Page['locator']>) {
	const cut = await loc.evaluate((root) => {
		const out: string[] = [];
		for (const el of [root, ...root.querySelectorAll<HTMLElement>('*')] as HTMLElement[]) {
			if (el.scrollWidth > el.clientWidth + 1) out.push(`${el.tagName.toLowerCase()} "${el.textContent?.trim()}" ${el.scrollWidth} > ${el.clientWidth}`);
		}
		return out;
	});
	expect(cut).toEqual([]);
}

/** The element's text sits on one line: its height is that of one line box (plus padding). */
async function expectOneLine(loc: ReturnType<Page['locator']>) {
	const lines = await loc.evaluate((el) => {
		const range = document.createRange();
		range.selectNodeContents(el);
		const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top + r.height / 2)));
		return tops.size;
	});
	expect(lines).toBe(1);
}

test('the chat header: the state badge is never cut and the "continues by itself" pill stays on one line', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.push({ text: 'All three containers are running.' });
	await signIn(page, env.admin);
	await page.getByTestId('composer-input').fill('how is the fleet doing today, all containers on strong, and anything that needs attention this week?');
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('All three containers are running.');
	await expect(page.getByTestId('session-state')).toHaveText('Idle');
	const sessionId = page.url().split('/').pop()!;
	await sql`insert into assent_windows (session_id, expires_at) values (${sessionId}, now() + interval '28 minutes 32 seconds')`;
	await page.reload();
	await expect(page.getByTestId('assent-window')).toBeVisible();
	for (const [name, size] of [
		['1280', DESKTOP],
		['1024', LAPTOP],
		['390', PHONE]
	] as const) {
		await page.setViewportSize(size);
		await expect(page.getByTestId('session-state')).toHaveText('Idle');
		await expectNotCut(page.getByTestId('session-state'));
		await expectOneLine(page.getByTestId('assent-window'));
		await expectNotCut(page.getByTestId('assent-window'));
		const doc = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
		expect(doc).toBeLessThanOrEqual(0);
		await shoot(page, test.info(), `chat-header-${name}`);
	}
});

test("stderr is not failure: a succeeded step's stderr (vzdump logs there) is not red, a failed step's is", async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{
					name: 'request_execution',
					args: { target: 'lxc:strong/100', action: 'vzdump', params: { storage: 'local', mode: 'snapshot' }, reason: 'a backup before the upgrade' }
				}
			]
		},
		{ text: 'Waiting for your approval.' },
		{
			toolCalls: [
				{
					name: 'request_execution',
					args: { target: 'lxc:strong/100', action: 'vzdump', params: { storage: 'local-lvm', mode: 'snapshot' }, reason: 'a second copy' }
				}
			]
		},
		{ text: 'The backup is done; a second copy waits for you.' },
		{ text: 'That storage holds no backups.' }
	);
	await signIn(page, env.admin);
	await page.getByTestId('composer-input').fill('back up caddy');
	await page.getByTestId('send').click();
	const cards = page.getByTestId('execution-card');
	await cards.first().getByTestId('approve').click();
	await expect(cards.first()).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(cards.nth(1)).toHaveAttribute('data-status', 'awaiting_approval', { timeout: scaled(30_000) });
	await cards.nth(1).getByTestId('approve').click();
	await expect(cards.nth(1)).toHaveAttribute('data-status', 'failed', { timeout: scaled(30_000) });
	const red = await page.evaluate(() => {
		const probe = document.createElement('span');
		probe.className = 'text-red-600';
		document.body.append(probe);
		const c = getComputedStyle(probe).color;
		probe.remove();
		return c;
	});
	const okErr = cards.first().getByTestId('step-output').locator('[data-stream="stderr"]');
	await expect(okErr).toContainText('INFO: Starting Backup of VM 100');
	expect(await okErr.evaluate((el) => getComputedStyle(el).color)).not.toBe(red);
	const badErr = cards.nth(1).getByTestId('step-output').locator('[data-stream="stderr"]');
	await expect(badErr).toContainText('does not support backups');
	expect(await badErr.evaluate((el) => getComputedStyle(el).color)).toBe(red);
	await cards.first().scrollIntoViewIfNeeded();
	await shoot(page, test.info(), 'stderr-by-outcome-1280');
	await expect.poll(async () => (await llm.state()).pending, { timeout: scaled(20_000) }).toBe(0);
});

test('the reply after an approved plan says the plan ended (not "after your answer")', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			text: 'Here is the plan.',
			toolCalls: [
				{
					name: 'propose_plan',
					args: { title: 'Give media more memory', steps: [{ action: 'pct_set', target: 'lxc:strong/101', params: { memory: 4096 }, why: 'it swaps' }] }
				}
			]
		},
		{ text: 'The plan ran: media has 4 GiB now.' }
	);
	await signIn(page, env.admin);
	await page.getByTestId('composer-input').fill('media swaps, give it more memory');
	await page.getByTestId('send').click();
	await page.getByTestId('approve-plan').click();
	const last = page.locator('[data-testid="message"][data-role="assistant"]').last();
	await expect(last).toContainText('The plan ran', { timeout: scaled(60_000) });
	await expect(last).toHaveAttribute('data-origin', 'plan');
	await expect(last.getByTestId('origin-label')).toHaveText('continued after the approved plan ended');
	const sessionId = page.url().split('/').pop()!;
	const [row] = await sql`select origin from messages where session_id = ${sessionId} and role = 'assistant' order by seq desc limit 1`;
	expect(row.origin).toBe('plan');
	await shoot(page, test.info(), 'continued-after-plan-1280');
});

const PROBES = [
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
];

/** Settings → Check the model: the app reads the server again (it caches what the server is). */
async function checkModel(page: Page, env: { llmURL: string }) {
	await llmControl(env.llmURL).push(...PROBES);
	await page.goto('/settings');
	await page.getByTestId('check-model').click();
	await expect(page.locator('[data-testid="model-probe"]')).toHaveCount(4, { timeout: scaled(30_000) });
}

test('a cut context is said once per session, names the configured server, links to Settings and is short on a phone', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.dialect('ollama', 1024);
	try {
		await signIn(page, env.admin);
		await checkModel(page, env);
		await expect(page.getByTestId('model-context')).toHaveText("Context: 1024 tokens (Ollama (the model's num_ctx)); the model was trained for 32768.");
		await llm.push({ text: 'First answer.' }, { text: 'Second answer.' });
		await page.goto('/');
		await page.getByTestId('composer-input').fill('hello');
		await page.getByTestId('send').click();
		const replies = page.locator('[data-testid="message"][data-role="assistant"]');
		await expect(replies.last()).toContainText('First answer.');
		await page.getByTestId('composer-input').fill('and again');
		await page.getByTestId('send').click();
		await expect(replies.last()).toContainText('Second answer.');
		await expect(replies).toHaveCount(2);
		const notes = page.locator('[data-testid="note"][data-kind="context"]');
		await expect(notes).toHaveCount(1);
		await expect(notes.getByTestId('context-summary')).toContainText('The context was cut: Ollama read 1024 of about');
		await expect(notes.getByTestId('context-settings')).toHaveAttribute('href', '/settings#model');
		await shoot(page, test.info(), 'context-note-1280');
		await page.setViewportSize(PHONE);
		const box = (await notes.boundingBox())!;
		const lineHeight = await notes.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight));
		expect(box.height).toBeLessThanOrEqual(3 * lineHeight + 1);
		await shoot(page, test.info(), 'context-note-390');
		await notes.getByTestId('context-summary').click();
		await expect(notes).toContainText('OLLAMA_CONTEXT_LENGTH=16384');
		await notes.getByTestId('context-settings').click();
		await expect(page).toHaveURL(/\/settings#model$/);
		await expect(page.getByTestId('model-section')).toBeInViewport();
	} finally {
		await llm.reset();
		await page.setViewportSize(DESKTOP);
		await checkModel(page, env);
		await llm.reset();
	}
});

test('Knowledge on a phone: titles are whole beside Edit/Delete, the preview renders Markdown, the search placeholder fits', async ({ page, env, sql }) => {
	await sql`delete from knowledge where title like 'E2E screen %'`;
	const title = 'E2E screen TypeType on CT 105 (the Node.js app, its unit and health)';
	await sql`insert into knowledge (title, body, source) values (${title}, ${'## Where\n\nTypeType runs on **CT 105** as `typetype.service`, port 3000.'}, 'page')`;
	try {
		await signIn(page, env.admin, PHONE);
		await page.goto('/knowledge');
		const row = page.getByTestId('knowledge-row').filter({ hasText: 'E2E screen TypeType' });
		await expect(row).toBeVisible();
		await expectNotCut(row.getByTestId('knowledge-title'));
		await expect(row.getByTestId('knowledge-title')).toHaveText(title);
		const t = (await row.getByTestId('knowledge-title').boundingBox())!;
		const edit = (await row.getByTestId('edit-note').boundingBox())!;
		const del = (await row.getByTestId('delete-note').boundingBox())!;
		for (const b of [edit, del]) expect(t.y + t.height <= b.y || t.x + t.width <= b.x).toBe(true);
		expect(del.x + del.width).toBeLessThanOrEqual(PHONE.width);
		const preview = row.getByTestId('knowledge-row-preview');
		await expect(preview.locator('strong')).toHaveText('CT 105');
		await expect(preview.locator('code')).toHaveText('typetype.service');
		await expect(preview).not.toContainText('**');
		await expect(preview).not.toContainText('##');
		const search = page.getByTestId('knowledge-search');
		const fits = await search.evaluate((el: HTMLInputElement) => {
			const s = getComputedStyle(el);
			const ctx = document.createElement('canvas').getContext('2d')!;
			ctx.font = `${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
			const room = el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
			return { text: ctx.measureText(el.placeholder).width, room };
		});
		expect(fits.text).toBeLessThanOrEqual(fits.room);
		await shoot(page, test.info(), 'knowledge-390');
	} finally {
		await sql`delete from knowledge where title like 'E2E screen %'`;
	}
});

test('the review overview says what it counts and agrees with the session it lists', async ({ page, env, sql }) => {
	const id = await insertHealthySessionFixture(sql, { at: new Date('2021-03-04T10:00:00Z'), title: 'E2E screen healthy restart' });
	await signIn(page, env.admin);
	await page.goto('/admin/review?from=2021-03-04&to=2021-03-04');
	await expect(page.getByTestId('review-session-row')).toHaveCount(1);
	const row = page.getByTestId('review-session-row');
	await expect(row).toContainText('reached');
	await expect(page.getByTestId('chart-findings')).toHaveText('No problems found in the session of this range; it reached the goal.');
	await shoot(page, test.info(), 'review-overview-1280');
	await page.goto(`/admin/review/${id}`);
	// The session's page lists the goal's outcome, and says it is not a problem.
	await expect(page.getByTestId('finding')).toHaveCount(1);
	await expect(page.getByTestId('finding').first()).toHaveAttribute('data-kind', 'goal_outcome');
	await expect(page.getByTestId('finding-title')).toHaveText('Goal reached');
	await expect(page.getByTestId('findings-heading')).toHaveText("Findings (no problems, and the goal's outcome)");
});

test('the pages at 1280 and 390 px (look at them: test-results/…/tour-*.png)', async ({ page, env }) => {
	await signIn(page, env.admin);
	for (const [name, size] of [
		['1280', DESKTOP],
		['390', PHONE]
	] as const) {
		await page.setViewportSize(size);
		await page.goto('/');
		const firstChat = page.getByTestId('sidebar').locator('a[href^="/chat/"]').first();
		const href = await firstChat.getAttribute('href').catch(() => null);
		if (href) await page.goto(href);
		await expect(page.getByTestId('app-shell').or(page.getByTestId('sidebar')).first()).toBeAttached();
		await shoot(page, test.info(), `tour-chat-${name}`);
		for (const [path, testid] of [
			['/ops', 'ops-page'],
			['/knowledge', 'knowledge-page'],
			['/admin/review', 'review-page']
		] as const) {
			await page.goto(path);
			await expect(page.getByTestId(testid)).toBeVisible();
			const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
			expect(overflow, `${path} at ${name}`).toBeLessThanOrEqual(0);
			await shoot(page, test.info(), `tour-${path.split('/').pop()}-${name}`);
		}
	}
});
