// Issue #42 item 7: an alert that resolves while its fix waits for approval says so on the fix's
// cards, live, in the chat and on Ops ("The alert resolved at 14:02 — still needed?"), and the
// agent re-checks before anything runs.
import { createHash } from 'node:crypto';
import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';
import { waitForAlertOutcome } from '../helpers/alerts';

const RESOLVED = /^The alert resolved at \d{1,2}:\d{2}( ?[AP]M)? — still needed\?$/;

const group = (status: 'firing' | 'resolved') =>
	JSON.stringify({
		version: '4',
		groupKey: '{}:{alertname="TemplatesStale"}',
		status,
		receiver: 'nomos',
		groupLabels: { alertname: 'TemplatesStale' },
		commonLabels: { alertname: 'TemplatesStale', severity: 'warning', instance: 'strong' },
		commonAnnotations: { summary: 'The template list on strong is stale' },
		externalURL: 'http://am',
		alerts: [{ status, labels: { alertname: 'TemplatesStale', instance: 'strong' }, annotations: {}, startsAt: '2026-12-01T10:00:00Z', fingerprint: 'f42' }]
	});

test('a resolved alert marks the plan and the request that wait for approval, in the chat and on Ops, at 1280 and 390 px', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	const secret = `nomos_hook_${crypto.randomUUID()}`;
	const [hook] = await sql<
		{ id: string }[]
	>`insert into alert_hooks (name, kind, secret_hash) values ('am-e2e', 'alertmanager', ${createHash('sha256').update(secret).digest('hex')}) returning id`;
	const post = async (body: string) => {
		const r = await fetch(`${env.baseURL}/api/hooks/${hook.id}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
			body
		});
		expect(r.status).toBe(202);
		// Stored and answered at once; the app's worker then applies it.
		const [outcome] = await waitForAlertOutcome(sql, (await r.json()).deliveryId);
		return outcome as { outcome: string; sessionId: string };
	};

	// The investigation proposes a plan, as a fix does (the turn ends there: the plan waits).
	await llm.push({
		toolCalls: [
			{
				name: 'propose_plan',
				args: { title: 'Refresh the template list on strong', steps: [{ action: 'pveam_update', target: 'strong', params: {}, why: 'the list is stale' }] }
			}
		]
	});
	const opened = await post(group('firing'));
	expect(opened.outcome).toBe('opened');
	const sessionId = opened.sessionId;
	await expect
		.poll(async () => (await sql`select 1 from plans where session_id = ${sessionId} and status = 'proposed'`).length, { timeout: scaled(20_000) })
		.toBe(1);
	// And a request that waits too (the chat shows only what the agent's replies asked for; Ops shows every one).
	const [e] = await sql<{ id: string }[]>`
		insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, expires_at)
		values (${sessionId}, 'strong', 'lxc:strong/105', 'pct_start', '{}'::jsonb, 'config_mutation', ${'h-' + crypto.randomUUID()}, 'pct start 105', 'start caddy again', 'awaiting_approval', now() + interval '1 hour')
		returning id`;
	await sql`insert into execution_sessions (execution_id, session_id) values (${e.id}, ${sessionId})`;

	await login(page, env.admin);
	await page.setViewportSize({ width: 1280, height: 900 });
	await page.goto(`/chat/${sessionId}`);
	const plan = page.getByTestId('plan-card');
	await expect(plan).toHaveAttribute('data-status', 'proposed');
	await expect(page.getByTestId('alert-resolved')).toHaveCount(0);

	// The alert resolves while the page is open: the plan's card asks, live; the agent re-checks.
	await llm.push({ text: 'Re-checked: the template list on strong is fresh again, so the plan is no longer needed. You can deny it.' });
	expect((await post(group('resolved'))).outcome).toBe('resolved');
	await expect(plan.getByTestId('alert-resolved')).toHaveText(RESOLVED);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('no longer needed', { timeout: scaled(20_000) });
	const told = (await llm.requests()).at(-1)!;
	expect(JSON.stringify(told.body)).toContain('re-check with read-only tools whether it is still needed');
	await page.screenshot({ path: 'test-results/alert-resolved-chat-1280.png' });
	await page.setViewportSize({ width: 390, height: 844 });
	await plan.scrollIntoViewIfNeeded();
	await expect(plan.getByTestId('alert-resolved')).toBeInViewport();
	await page.screenshot({ path: 'test-results/alert-resolved-chat-390.png' });

	// Ops shows the request that waits with the same question.
	for (const width of [1280, 390]) {
		await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
		await page.goto('/ops');
		const onOps = page.getByTestId('ops-pending').locator(`[data-testid="execution-card"][data-execution-id="${e.id}"]`);
		await expect(onOps.getByTestId('alert-resolved')).toHaveText(RESOLVED);
		await onOps.scrollIntoViewIfNeeded();
		await page.screenshot({ path: `test-results/alert-resolved-ops-${width}.png` });
	}

	// It fires again: the fix is needed again and the question goes, live.
	await page.setViewportSize({ width: 1280, height: 900 });
	await page.goto(`/chat/${sessionId}`);
	await expect(plan.getByTestId('alert-resolved')).toHaveText(RESOLVED);
	await llm.push({ text: 'It fired again.' });
	await sql`update alert_groups set changed_at = now() - interval '2 hours', last_seen_at = now() - interval '2 hours' where hook_id = ${hook.id}`;
	expect((await post(group('firing'))).outcome).toBe('reinvestigated');
	await expect(page.getByTestId('alert-resolved')).toHaveCount(0);
	await expect.poll(async () => (await llm.state()).pending, { timeout: scaled(20_000) }).toBe(0);
	await sql`update alert_hooks set revoked_at = now() where id = ${hook.id}`;
});
