import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

test('five tool calls: live header counts up, stays collapsed, expands smoothly, reload shows it collapsed', async ({ page, env, sql }) => {
	// The inventory sync runs at start; wait until the double's containers are in.
	await expect
		.poll(async () => (await sql`select count(*)::int as n from entities where kind = 'lxc'`)[0].n, { timeout: scaled(30_000) })
		.toBeGreaterThanOrEqual(3);
	const llm = llmControl(env.llmURL);
	const calls: Array<[string, Record<string, unknown>]> = [
		['list_lxcs', {}],
		['get_lxc_state', { name: 'caddy' }],
		['get_lxc_state', { name: 'media' }],
		['get_lxc_state', { vmid: '102' }],
		['get_state_snapshot', {}]
	];
	for (const [name, args] of calls) await llm.push({ toolCalls: [{ name, args }], delayMs: 400 });
	await llm.push({ text: 'caddy and media are running; backup is stopped.', chunkSize: 6, delayMs: 30 });

	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('Check my containers');
	await page.getByTestId('send').click();

	const group = page.getByTestId('tool-group').first();
	const progress = group.getByTestId('tool-group-progress');
	// The header counts up live while the body stays collapsed; its status names a running call,
	// flashes a finished one (✓, see the next test) or sums up.
	const seen = new Set<string>();
	const statuses = new Set<string>();
	await expect
		.poll(
			async () => {
				const t = await progress.textContent({ timeout: 100 }).catch(() => null);
				if (t) seen.add(t);
				const st = await group
					.getByTestId('tool-group-status')
					.textContent({ timeout: 100 })
					.catch(() => null);
				if (st) statuses.add(st.trim());
				return seen.size;
			},
			{ timeout: scaled(30_000), intervals: [50] }
		)
		.toBeGreaterThanOrEqual(3);
	await expect(group.getByTestId('tool-group-body')).toHaveAttribute('data-open', 'false');
	expect([...seen].every((s) => /^\[\d\/\d done\]$/.test(s))).toBe(true);
	// A running call is named before its arguments have streamed in ("Running get_lxc_state…"), then with its target.
	expect(
		[...statuses].filter(
			(st) =>
				!/^(Running (list_lxcs|get_lxc_state( \((caddy|media|102)\))?|get_state_snapshot)…|✓ (list_lxcs|get_lxc_state \((caddy|media|102)\)|get_state_snapshot)|[1-5] tools?)$/.test(
					st
				)
		)
	).toEqual([]);

	const reply = page.locator('[data-testid="message"][data-role="assistant"]');
	await expect(reply).toHaveAttribute('data-status', 'complete', { timeout: scaled(30_000) });
	await expect(reply).toContainText('backup is stopped');
	await expect(group.getByTestId('tool-group-status')).toHaveText('5 tools');

	// Expanding animates the height from 0 (a CSS transition on the grid rows; checked by its
	// computed style rather than by sampling mid-flight, which a busy machine makes flaky).
	const body = group.getByTestId('tool-group-body');
	const closedHeight = (await body.boundingBox())!.height;
	expect(closedHeight).toBeLessThan(2);
	const transition = await body.evaluate((el) => {
		const cs = getComputedStyle(el);
		return { property: cs.transitionProperty, duration: parseFloat(cs.transitionDuration) };
	});
	expect(transition.property).toContain('grid-template-rows');
	expect(transition.duration).toBeGreaterThanOrEqual(0.1);
	await group.getByTestId('tool-group-header').click();
	await expect(body).toHaveAttribute('data-open', 'true');
	await expect.poll(async () => (await body.boundingBox())!.height).toBeGreaterThan(100);
	await expect(group.getByTestId('tool-call')).toHaveCount(5);
	await expect(group.getByTestId('tool-call').nth(1)).toContainText('caddy');
	await page.screenshot({ path: 'test-results/tool-group-open.png', fullPage: true });

	// Replayed from history: the same turn, collapsed, with the final summary.
	await page.reload();
	const again = page.getByTestId('tool-group').first();
	await expect(again.getByTestId('tool-group-status')).toHaveText('5 tools');
	await expect(again.getByTestId('tool-group-body')).toHaveAttribute('data-open', 'false');
	await expect(page.locator('[data-testid="message"][data-role="assistant"]')).toContainText('backup is stopped');
});

test('a finished call flashes ✓ in the header, and the flash goes while the turn is still live', async ({ page, env, sql }) => {
	await expect
		.poll(async () => (await sql`select count(*)::int as n from entities where kind = 'lxc'`)[0].n, { timeout: scaled(30_000) })
		.toBeGreaterThanOrEqual(3);
	const llm = llmControl(env.llmURL);
	// One call, then a model that never answers until the reset at the end: the turn stays live.
	await llm.push({ toolCalls: [{ name: 'get_lxc_state', args: { name: 'caddy' } }] }, { fault: 'hang' });
	// Every text the first group's status takes, in order, as the DOM changes (a flash is short:
	// polling could miss it; a mutation observer cannot).
	await page.addInitScript(() => {
		const seen: string[] = [];
		(window as unknown as { __statuses: string[] }).__statuses = seen;
		new MutationObserver(() => {
			const t = document.querySelector('[data-testid="tool-group"] [data-testid="tool-group-status"]')?.textContent?.trim();
			if (t && t !== seen[seen.length - 1]) seen.push(t);
		}).observe(document, { subtree: true, childList: true, characterData: true });
	});
	const statuses = () => page.evaluate(() => (window as unknown as { __statuses: string[] }).__statuses);

	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('How is caddy?');
	await page.getByTestId('send').click();

	const status = page.getByTestId('tool-group').first().getByTestId('tool-group-status');
	const reply = page.locator('[data-testid="message"][data-role="assistant"]').last();
	// The flash went (the model has not answered: nothing runs, the header sums up) …
	await expect(status).toHaveText('1 tool', { timeout: scaled(30_000) });
	await expect(reply).toHaveAttribute('data-status', 'streaming');
	// … after it was there: ✓ and the call, then the summary, the turn live throughout.
	const seen = await statuses();
	const flashed = seen.indexOf('✓ get_lxc_state (caddy)');
	expect(flashed, seen.join(' → ')).toBeGreaterThanOrEqual(0);
	expect(seen.slice(flashed + 1), seen.join(' → ')).toEqual(['1 tool']);

	// Let the turn end (the hanging request is cut) so no later spec meets it.
	await llm.reset();
	await expect(reply).not.toHaveAttribute('data-status', 'streaming', { timeout: scaled(30_000) });
});
