// Issue #48 item 4: the Incidents page lists the incidents an alert hook opened, by node and
// origin, with time to first finding and each finding with its verdict and evidence; it follows
// them live (an alert that resolves turns its incident resolved without a reload), filters them,
// opens their session, and the sidebar labels the alert's chat with its incident. Other specs
// share the app and DB: this one finds its own incident by id and never assumes the list is empty.
import { createHash } from 'node:crypto';
import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';
import { waitForAlertOutcome } from '../helpers/alerts';

test('the Incidents page lists, filters and follows an alert’s incident live, at 1280 and 390 px', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	const tag = crypto.randomUUID().slice(0, 8);
	const node = `inc-${tag}`;
	const hookName = `am-incidents-${tag}`;
	const secret = `nomos_hook_${crypto.randomUUID()}`;
	const [hook] = await sql<{ id: string }[]>`
		insert into alert_hooks (name, kind, secret_hash) values (${hookName}, 'alertmanager', ${createHash('sha256').update(secret).digest('hex')}) returning id`;
	const group = (status: 'firing' | 'resolved') =>
		JSON.stringify({
			version: '4',
			groupKey: `{}:{alertname="DiskFull",instance="${node}"}`,
			status,
			receiver: 'nomos',
			groupLabels: { alertname: 'DiskFull' },
			commonLabels: { alertname: 'DiskFull', severity: 'critical', instance: node },
			commonAnnotations: { summary: `The root disk on ${node} is full` },
			externalURL: 'http://am',
			alerts: [{ status, labels: { alertname: 'DiskFull', instance: node }, annotations: {}, startsAt: '2026-12-06T10:00:00Z', fingerprint: `f-${tag}` }]
		});
	const post = async (body: string) => {
		const r = await fetch(`${env.baseURL}/api/hooks/${hook.id}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
			body
		});
		expect(r.status).toBe(202);
		const [outcome] = await waitForAlertOutcome(sql, (await r.json()).deliveryId);
		return outcome as { outcome: string; sessionId: string; incidentId: string };
	};

	await llm.push({ text: `Finding: the root filesystem on ${node} is at 100%, /var/log holds most of it.` });
	const opened = await post(group('firing'));
	expect(opened.outcome).toBe('opened');
	await expect.poll(async () => (await llm.state()).pending, { timeout: scaled(20_000) }).toBe(0);

	// Findings as the investigation records them (mark_hypothesis → db/queries/findings.ts), one of
	// each verdict; the evidence of one is a long unbroken path (it must wrap at 390 px).
	const journal = `/var/log/journal/${'0123456789abcdef'.repeat(3)}/system@${'f'.repeat(40)}.journal`;
	const findings = [
		{ what: `The root filesystem on ${node} is at 100%`, verdict: 'present', evidence: `df -h /: 100% used (c-df); ${journal} holds 38 GB` },
		{ what: 'A runaway service fills /var/log', verdict: 'uncertain', evidence: 'c-du' },
		{ what: 'The disk itself failed', verdict: 'resolved', evidence: 'smartctl -H: PASSED (c-smart)' }
	];
	for (const f of [...findings].reverse())
		await sql`insert into findings (incident_id, what, evidence, verdict) values (${opened.incidentId}, ${f.what}, ${f.evidence}, ${f.verdict})`;

	await login(page, env.admin);
	await page.setViewportSize({ width: 1280, height: 900 });
	await page.goto('/incidents');
	const item = page.locator(`[data-testid="incident"][data-incident-id="${opened.incidentId}"]`);
	await expect(item).toHaveAttribute('data-status', 'open');
	await expect(item.getByTestId('incident-node')).toHaveText(node);
	await expect(item.getByTestId('incident-origin')).toHaveText(hookName);
	await expect(item.getByTestId('incident-alerts')).toHaveText('1');
	await expect(item.getByTestId('incident-session')).toContainText(node);
	// The agent answered: the time to its first finding is measured, the fix not verified yet.
	await expect(item.getByTestId('incident-first-finding')).toHaveText(/^\d+(s|m \d+s)$/);
	await expect(item.getByTestId('incident-verified-fix')).toHaveText('—');
	// Each finding with its verdict and evidence, present first, then uncertain, then resolved.
	await expect(item.getByTestId('incident-findings')).toHaveText('1 present · 1 uncertain · 1 resolved');
	await expect(item.getByTestId('incident-finding-verdict')).toHaveText(['present', 'uncertain', 'resolved']);
	await expect(item.getByTestId('incident-finding-what')).toHaveText(findings.map((f) => f.what));
	await expect(item.getByTestId('incident-finding-evidence')).toHaveText(findings.map((f) => `Evidence: ${f.evidence}`));

	// The origin filter keeps only this hook's incidents; the node filter only this node's.
	await page.getByTestId('incidents-filter-origin').selectOption(hookName);
	await expect(page.getByTestId('incident')).toHaveCount(1);
	await page.getByTestId('incidents-filter-origin').selectOption('');
	await page.getByTestId('incidents-filter-node').selectOption(node);
	await expect(page.getByTestId('incident')).toHaveCount(1);
	await page.getByTestId('incidents-filter-status').selectOption('all');
	await page.screenshot({ path: 'test-results/incidents-1280.png' });

	// The sidebar labels the alert's chat with its incident.
	const chat = page.locator(`[data-testid="session-item"][data-session-id="${opened.sessionId}"]`);
	await expect(chat.getByTestId('session-incident')).toHaveText('incident · open · 1 alert');

	// The re-check settles the two open findings (as mark_hypothesis would, without an event: the
	// page shows them with the next change). The alert resolves while the page is open (no fix
	// waits, every finding resolved: no re-check turn): the incident turns resolved and its
	// findings show their new verdicts, live (no reload).
	await sql`update findings set verdict = 'resolved', evidence = evidence || '; re-check: df -h /: 41% used (c-df2)' where incident_id = ${opened.incidentId} and verdict <> 'resolved'`;
	expect((await post(group('resolved'))).outcome).toBe('resolved');
	await expect(item).toHaveAttribute('data-status', 'resolved');
	await expect(item.getByTestId('incident-finding-verdict')).toHaveText(['resolved', 'resolved', 'resolved']);
	await expect(item.getByTestId('incident-findings')).toHaveText('3 resolved');
	await expect(chat.getByTestId('session-incident')).toHaveText('incident · resolved · 1 alert');
	await page.getByTestId('incidents-filter-status').selectOption('open');
	await expect(item).toHaveCount(0);
	await page.getByTestId('incidents-filter-status').selectOption('resolved');
	await expect(item).toHaveAttribute('data-status', 'resolved');

	// At 390 px the page fits the width, and the incident opens its session.
	await page.setViewportSize({ width: 390, height: 844 });
	await expect(item).toBeInViewport();
	expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
	await expect(item.getByTestId('incident-finding').first()).toBeInViewport();
	await page.screenshot({ path: 'test-results/incidents-390.png', fullPage: true });
	await item.getByTestId('incident-session').click();
	await expect(page).toHaveURL(new RegExp(`/chat/${opened.sessionId}$`));

	await sql`update alert_hooks set revoked_at = now() where id = ${hook.id}`;
});
