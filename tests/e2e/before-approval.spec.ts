// Issue #42 item 5 on screen: a request the host says cannot run (a disk shrink, a destroy of a
// running CT) shows "cannot run now: …" and no Approve, on the chat card and on Ops, at 1280 and
// 390 px; Deny and Edit stay.
import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

const SIZES = [
	['1280', { width: 1280, height: 900 }],
	['390', { width: 390, height: 844 }]
] as const;

test('a shrink and a destroy of a running CT: "cannot run now", no Approve, in the chat and on Ops', async ({ page, env, sql }) => {
	// As the harness seeds them (other specs may have run first): caddy running, backup stopped with an 8 GiB rootfs.
	const { patchCtIn } = await import('../doubles/proxmox/state');
	await patchCtIn(env.proxmox.stateDir, 100, { status: 'running' });
	await patchCtIn(env.proxmox.stateDir, 102, { status: 'stopped', rootfs: 'local-lvm:vm-102-disk-0,size=8G' });
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{
					name: 'request_execution',
					args: { target: 'lxc:strong/102', action: 'pct_resize', params: { disk: 'rootfs', size: '4G' }, reason: 'free some space' }
				},
				{ name: 'request_execution', args: { target: 'lxc:strong/100', action: 'pct_destroy', params: {}, reason: 'caddy is unused' } }
			]
		},
		{ text: 'Neither can run: the disk cannot shrink, and caddy is running.' }
	);
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('shrink backup and remove caddy');
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('Neither can run', { timeout: scaled(30_000) });

	const cards = page.getByTestId('execution-card');
	await expect(cards).toHaveCount(2);
	const shrink = cards.filter({ hasText: 'pct_resize' });
	const destroy = cards.filter({ hasText: 'pct_destroy' });
	await expect(shrink.getByTestId('before-approval')).toHaveText(
		'Cannot run now: CT 102 rootfs is 8G now; resizing it to 4G would shrink it (pct_resize only grows a disk; Proxmox cannot shrink one). It cannot be approved: deny it, or edit it into something that can run.'
	);
	await expect(destroy.getByTestId('before-approval')).toContainText('Cannot run now: CT 100 is running: a running guest is not destroyed');
	for (const card of [shrink, destroy]) {
		await expect(card.getByTestId('status-pill')).toHaveText('cannot run now');
		await expect(card.getByTestId('approve')).toHaveCount(0);
		await expect(card.getByTestId('deny')).toBeVisible();
		await expect(card.getByTestId('edit')).toBeVisible();
	}

	// Nothing here can be approved, so the header does not say the chat waits for an approval.
	await expect(page.getByTestId('session-state')).not.toContainText('approval');
	for (const [name, size] of SIZES) {
		await page.setViewportSize(size);
		await expect(shrink.getByTestId('before-approval')).toBeVisible();
		expect(await page.evaluate(() => document.documentElement.scrollWidth), `no sideways scroll at ${name} px`).toBeLessThanOrEqual(size.width);
		await page.screenshot({ path: `test-results/before-approval-chat-${name}.png`, fullPage: true });
	}

	await page.setViewportSize(SIZES[0][1]);
	await page.goto('/ops');
	const ops = page.getByTestId('execution-card').filter({ has: page.getByTestId('before-approval') });
	await expect(ops).toHaveCount(2);
	await expect(ops.getByTestId('approve')).toHaveCount(0);
	// Listed apart, to be dismissed: never counted as approvals waiting.
	await expect(page.getByTestId('ops-cannot-run').getByTestId('execution-card')).toHaveCount(2);
	await expect(page.getByTestId('ops-cannot-run-count')).toHaveText('(2)');
	await expect(page.getByTestId('ops-pending').getByTestId('before-approval')).toHaveCount(0);
	for (const [name, size] of SIZES) {
		await page.setViewportSize(size);
		// Loaded at this width: a resize would leave the phone's menu drawer sliding in the screenshot.
		await page.reload();
		await expect(ops.first().getByTestId('before-approval')).toBeVisible();
		expect(await page.evaluate(() => document.documentElement.scrollWidth), `no sideways scroll on Ops at ${name} px`).toBeLessThanOrEqual(size.width);
		await page.screenshot({ path: `test-results/before-approval-ops-${name}.png`, fullPage: true });
	}

	// Nothing was approved or ran; caddy still runs.
	const [{ n }] =
		await sql`select count(*)::int as n from approvals a join executions e on e.id = a.execution_id where e.action in ('pct_resize', 'pct_destroy') and e.before_approval->>'outcome' = 'cannot_run'`;
	expect(n).toBe(0);
	// Deny clears them from the pending list (and leaves Ops as the next spec expects it).
	await page.setViewportSize(SIZES[0][1]);
	for (let left = 2; left > 0; left--) {
		const first = ops.first();
		const id = await first.getAttribute('data-execution-id');
		await first.getByTestId('deny').click();
		await first.getByTestId('confirm-deny').click();
		await expect(page.locator(`[data-execution-id="${id}"]`).first()).toHaveAttribute('data-status', 'denied');
		await expect(page.getByTestId('ops-cannot-run').getByTestId('before-approval')).toHaveCount(left - 1);
	}
});
