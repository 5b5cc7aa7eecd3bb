// The screen tells the truth (issue #42, item 7), each point at 1280 and 390 px with the built app,
// the scripted model and the SSH Proxmox double: a plan waiting for approval is counted in the
// header and on Ops, the "continues by itself" banner ends with the plan (and stays gone after a
// reload), an execution refused before it ran is "not run" (card, Ops, review), and a settled
// retry note loses its "…"; a plan nobody approved in time is refused and then shown expired, live.
import type { Page, TestInfo } from '@playwright/test';
import { llmControl } from '../doubles/llm/client';
import { writeSeed } from '../doubles/proxmox/state';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

const SIZES = [
	{ name: '1280', width: 1280, height: 800 },
	{ name: '390', width: 390, height: 844 }
];

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

async function shoot(page: Page, info: TestInfo, name: string) {
	const file = info.outputPath(`${name}.png`);
	await page.screenshot({ path: file, fullPage: true });
	await info.attach(name, { path: file, contentType: 'image/png' });
}

/** Signs in at the desktop size (the sidebar is visible there), then takes the size asked for. */
async function signIn(page: Page, who: { username: string; password: string }, size: { width: number; height: number }) {
	await page.setViewportSize({ width: 1280, height: 800 });
	await login(page, who);
	await page.setViewportSize(size);
}

async function startChat(page: Page, text: string): Promise<string> {
	await page.getByTestId('composer-input').fill(text);
	await page.getByTestId('send').click();
	await expect(page).toHaveURL(/\/chat\/[0-9a-f-]{36}$/);
	return page.url().split('/').pop()!;
}

const planCall = (title: string, target: string) => ({
	text: 'Here is the plan.',
	toolCalls: [{ name: 'propose_plan', args: { title, steps: [{ action: 'pct_start', target, why: 'start it' }] } }]
});

for (const size of SIZES) {
	test(`${size.name} px: a plan waiting for approval is counted in the header and on Ops; the banner ends with the plan`, async ({ page, env }, info) => {
		const vmid = size.name === '1280' ? 120 : 121;
		await writeSeed(env.proxmox.stateDir, [{ vmid, hostname: `idle-${vmid}`, status: 'stopped', cores: 1, memory: 256 }]);
		const llm = llmControl(env.llmURL);
		const title = `Start idle-${vmid}`;
		await llm.push(planCall(title, `lxc:strong/${vmid}`), { text: `CT ${vmid} is running now.` });
		await signIn(page, env.admin, size);
		// Other specs of the run may leave things pending: Ops's count is read before and after.
		await page.goto('/ops');
		await expect(page.getByTestId('ops-pending-count')).toHaveText(/^\(\d+\)$/);
		const before = Number((await page.getByTestId('ops-pending-count').textContent())!.replace(/\D/g, ''));
		await page.goto('/');
		await expect(page.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');
		await startChat(page, `start CT ${vmid}`);

		const plan = page.getByTestId('plan-card');
		await expect(plan).toHaveAttribute('data-status', 'proposed');
		await expect(page.getByTestId('session-state')).toHaveText('Waiting for your approval (1)');
		await expect(page.getByTestId('session-state')).toHaveAttribute('data-state', 'approval');
		await shoot(page, info, `plan-waiting-chat-${size.name}`);

		// Ops, open beside the chat: the plan is counted and listed with its Approve, live.
		const ops = await page.context().newPage();
		await ops.setViewportSize(size);
		await ops.goto('/ops');
		const pending = ops.getByTestId('ops-pending');
		await expect(ops.getByTestId('ops-pending-count')).toHaveText(`(${before + 1})`);
		const mine = pending.getByTestId('plan-card').filter({ hasText: title });
		await expect(mine).toBeVisible();
		await expect(mine.getByTestId('approve-plan')).toBeVisible();
		await expect(pending).not.toContainText('Nothing waits for your approval');
		await shoot(ops, info, `plan-waiting-ops-${size.name}`);

		// The banner is up while the plan runs (watched every frame: a one-step plan is quick).
		const bannerShown = page.waitForFunction(() => document.querySelector('[data-testid="assent-window"]') !== null, undefined, {
			polling: 'raf',
			timeout: scaled(30_000)
		});
		await plan.getByTestId('approve-plan').click();
		await bannerShown;
		// Ops follows the decision over its live stream: nothing waits any more.
		await expect(ops.getByTestId('ops-pending-count')).toHaveText(`(${before})`);
		await expect(mine).toHaveCount(0);
		if (before === 0) await expect(pending).toContainText('Nothing waits for your approval');

		await expect(plan).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(45_000) });
		await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText(`CT ${vmid} is running now.`, {
			timeout: scaled(30_000)
		});
		// The plan has ended: "continues by itself" no longer holds, now and after a reload.
		await expect(page.getByTestId('assent-window')).toHaveCount(0);
		await expect(page.getByTestId('session-state')).toHaveText('Idle');
		await shoot(page, info, `plan-ended-chat-${size.name}`);
		await page.reload();
		await expect(page.getByTestId('plan-card')).toHaveAttribute('data-status', 'succeeded');
		await expect(page.getByTestId('assent-window')).toHaveCount(0);
		await ops.close();
	});

	test(`${size.name} px: an execution refused before it ran is "not run" on the plan card, on Ops and in the review; the banner ends with the failed plan`, async ({
		page,
		env
	}, info) => {
		const vmid = size.name === '1280' ? 122 : 123;
		await writeSeed(env.proxmox.stateDir, [{ vmid, hostname: `busy-${vmid}`, status: 'running', cores: 1, memory: 256 }]);
		const llm = llmControl(env.llmURL);
		await llm.push(planCall(`Start busy-${vmid}`, `lxc:strong/${vmid}`), { text: `CT ${vmid} was already running; nothing was started.` });
		await signIn(page, env.admin, size);
		const sessionId = await startChat(page, `start CT ${vmid}`);

		const plan = page.getByTestId('plan-card');
		await plan.getByTestId('approve-plan').click();
		await expect(plan).toHaveAttribute('data-status', 'failed', { timeout: scaled(45_000) });
		const step = plan.getByTestId('plan-step');
		await expect(step).toHaveAttribute('data-state', 'not_run');
		await expect(step.getByTestId('step-not-run')).toHaveText('not run');
		await expect(step).toContainText(`not run: CT ${vmid} is running, expected stopped`);
		await expect(step.getByTestId('status-pill')).toHaveCount(0);
		// Nothing of the plan ran: the plan itself is not run either, not failed.
		await expect(plan.getByTestId('status-pill')).toHaveText('not run');
		await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('nothing was started', { timeout: scaled(30_000) });
		await expect(page.getByTestId('assent-window')).toHaveCount(0);
		await shoot(page, info, `not-run-chat-${size.name}`);
		await page.reload();
		await expect(step).toHaveAttribute('data-state', 'not_run');
		await expect(page.getByTestId('assent-window')).toHaveCount(0);

		// Ops: the step's execution among the recent ones, "not run" beside its error.
		await page.goto('/ops');
		const card = page
			.getByTestId('ops-recent')
			.getByTestId('execution-card')
			.filter({ hasText: `CT ${vmid} is running, expected stopped` });
		await expect(card.getByTestId('status-pill')).toHaveText('not run');
		await expect(card.getByTestId('status-pill')).toHaveAttribute('data-status', 'not_run');
		await expect(card.getByTestId('execution-error')).toHaveText(`not run: CT ${vmid} is running, expected stopped`);
		await card.scrollIntoViewIfNeeded();
		await shoot(page, info, `not-run-ops-${size.name}`);

		// The admin review counts it as not run, not failed.
		await page.goto(`/admin/review/${sessionId}`);
		await expect(page.getByTestId('review-exec-not-run')).toHaveText('1 not run');
		await expect(page.getByTestId('review-exec-failed')).toHaveText('0 failed');
		await expect(page.locator('[data-testid="finding"][data-kind="silent_failure"]')).toContainText('1 execution not run never reported');
		await expect(page.locator('[data-testid="finding"][data-kind="silent_failure"]')).toContainText(`was not run: CT ${vmid} is running, expected stopped`);
		await shoot(page, info, `not-run-review-${size.name}`);
	});

	test(`${size.name} px: a retry note keeps its "…" while the retry is under way and loses it once the answer arrived`, async ({ page, env }, info) => {
		const llm = llmControl(env.llmURL);
		await llm.push({ fault: 'http500' }, { fault: 'http500' }, { text: 'The answer after two retries.', chunkSize: 4, delayMs: 30 });
		await signIn(page, env.admin, size);
		await startChat(page, 'say something after two server errors');
		const reply = page.locator('[data-testid="message"][data-role="assistant"]').last();
		const notes = reply.locator('[data-kind="retry"]');
		// While a retry is under way (1 s each here) its note ends in "…": watched every frame, since
		// that state lasts only as long as the retry's wait.
		await page.waitForFunction(
			() => [...document.querySelectorAll('[data-kind="retry"][data-pending="true"]')].some((n) => n.textContent?.includes('…')),
			undefined,
			{ polling: 'raf', timeout: scaled(20_000) }
		);
		await expect(notes.nth(1)).toBeVisible();
		await expect(notes.nth(0)).toHaveAttribute('data-pending', 'false');
		await expect(notes.nth(0)).not.toHaveText(/…/);
		await expect(reply).toHaveAttribute('data-status', 'complete');
		await expect(reply).toContainText('The answer after two retries.');
		await expect(notes).toHaveCount(2);
		for (const n of await notes.all()) {
			await expect(n).toHaveAttribute('data-pending', 'false');
			await expect(n).toHaveText(/^A server error \(HTTP 500\); retrying in 1 s \(attempt \d of 3\)$/);
		}
		await expect(reply.getByTestId('retry-countdown')).toHaveCount(0);
		await shoot(page, info, `retry-settled-${size.name}`);
		await page.reload();
		await expect(page.locator('[data-testid="message"][data-role="assistant"]').last().locator('[data-kind="retry"]').first()).toHaveText(
			/\(attempt 2 of 3\)$/
		);
	});
}

test('1280 px: a plan nobody approved in time is refused, then shown expired live (chat and Ops); the agent proposes again when asked', async ({
	page,
	env,
	sql
}, info) => {
	const vmid = 124;
	await writeSeed(env.proxmox.stateDir, [{ vmid, hostname: `late-${vmid}`, status: 'stopped', cores: 1, memory: 256 }]);
	const llm = llmControl(env.llmURL);
	const title = `Start late-${vmid}`;
	await llm.push(planCall(title, `lxc:strong/${vmid}`));
	await signIn(page, env.admin, SIZES[0]);
	await page.goto('/');
	await expect(page.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');
	const sessionId = await startChat(page, `start CT ${vmid}`);

	const plan = page.getByTestId('plan-card');
	await expect(plan).toHaveAttribute('data-status', 'proposed');
	await expect(plan.getByTestId('plan-expires')).toHaveText(/^expires /);
	const ops = await page.context().newPage();
	await ops.setViewportSize(SIZES[0]);
	await ops.goto('/ops');
	const onOps = ops.getByTestId('ops-pending').getByTestId('plan-card').filter({ hasText: title });
	await expect(onOps.getByTestId('approve-plan')).toBeVisible();

	// Its wait ran out (as if proposed a day ago): the click is refused by the server, in words.
	await sql`update plans set expires_at = now() - interval '1 second' where session_id = ${sessionId} and status = 'proposed'`;
	await plan.getByTestId('approve-plan').click();
	await expect(plan.getByRole('alert')).toHaveText("This plan's approval has expired; ask the agent to propose it again.");
	await shoot(page, info, 'plan-expired-refused-1280');

	// The sweep marks it expired: both screens follow over their live streams, without a reload.
	await expect(plan).toHaveAttribute('data-status', 'expired', { timeout: scaled(40_000) });
	await expect(plan.getByTestId('status-pill').first()).toHaveText('expired');
	await expect(plan).toContainText('approval expired: nobody decided in time');
	await expect(plan.getByTestId('approve-plan')).toHaveCount(0);
	await expect(onOps).toHaveCount(0);
	await expect(page.getByTestId('session-state')).not.toHaveText(/Waiting for your approval/);
	await shoot(page, info, 'plan-expired-chat-1280');
	const ran = await sql`select 1 from executions e join plans p on p.id = e.plan_id where p.session_id = ${sessionId}`;
	expect(ran).toHaveLength(0);
	await page.reload();
	await expect(page.getByTestId('plan-card')).toHaveAttribute('data-status', 'expired');

	// Asked again, the agent has read that it expired and proposes a new plan, which waits afresh.
	await llm.push(planCall(title, `lxc:strong/${vmid}`));
	const before = (await llm.requests()).length;
	await page.getByTestId('composer-input').fill(`please start CT ${vmid} after all`);
	await page.getByTestId('send').click();
	await expect(page.getByTestId('plan-card')).toHaveCount(2, { timeout: scaled(30_000) });
	await expect(page.getByTestId('plan-card').last()).toHaveAttribute('data-status', 'proposed');
	await expect(page.getByTestId('plan-card').first()).toHaveAttribute('data-status', 'expired');
	const asked = (await llm.requests()).slice(before).map((r) => JSON.stringify(r.body?.messages ?? []));
	expect(asked.some((m) => m.includes(`The plan \\"${title}\\" (1 steps) expired: nobody approved it in time`))).toBe(true);
	await shoot(page, info, 'plan-proposed-again-1280');
	await ops.close();
});
