// Issue #45 incident (a) in Chromium, from the Proxmox VE webhook POST to the verified backup: the
// investigation reads storage use, the backups and a prune's dry run, the plan card lists exactly
// the volumes the dry run marked, one click on Approve plan runs the prune and the backup, and the
// new backup is on the storage (the double's state is the oracle). The fault, the alert and the
// model's script are the incident's own (tests/helpers/incidents.ts). This spec finds its own plan
// by its session and id: the whole run shares one app and one database.
import { createHash } from 'node:crypto';
import { llmControl } from '../doubles/llm/client';
import { readHealth, setHealthIn } from '../doubles/proxmox/health';
import { nodeStateIn } from '../doubles/proxmox/server';
import { backupVolid as volid, INCIDENT_A } from '../helpers/incidents';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';
import { waitForAlertOutcome } from '../helpers/alerts';

test('a backup that failed for lack of space: webhook → dry run on the plan card → one approval → the new backup is on local', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	const state = env.proxmox.stateDir;
	const before = await readHealth(state);
	// The incident's own fault and script (tests/helpers/incidents.ts), on the double the whole run shares.
	await INCIDENT_A.setup(nodeStateIn(state, env.proxmox.nodeName));
	try {
		const secret = `nomos_hook_${crypto.randomUUID()}`;
		const [hook] = await sql<{ id: string }[]>`
			insert into alert_hooks (name, kind, secret_hash)
			values ('pve-e2e-backup', ${INCIDENT_A.start.hook}, ${createHash('sha256').update(secret).digest('hex')}) returning id`;
		await llm.push(...INCIDENT_A.script());
		const posted = await fetch(`${env.baseURL}/api/hooks/${hook.id}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
			// Not PVE's own 'vzdump backup status' title: watches.spec finds its session by that text in the shared run.
			body: JSON.stringify({ ...INCIDENT_A.start.alert, title: 'backup job (strong): backup failed' })
		});
		expect(posted.status).toBe(202);
		// The intake answers 202 at once; the app's worker applies the delivery and opens the session.
		const [{ sessionId }] = await waitForAlertOutcome(sql, String(((await posted.json()) as { deliveryId: string }).deliveryId));
		await expect
			.poll(async () => (await sql<{ id: string }[]>`select id from plans where session_id = ${sessionId} and status = 'proposed'`).length, {
				timeout: scaled(30_000)
			})
			.toBe(1);
		const [{ id: planId }] = await sql<{ id: string }[]>`select id from plans where session_id = ${sessionId}`;

		await login(page, env.admin);
		await page.setViewportSize({ width: 1280, height: 900 });
		await page.goto(`/chat/${sessionId}`);
		const plan = page.locator(`#plan-${planId}`);
		await expect(plan).toHaveAttribute('data-status', 'proposed');
		const steps = plan.getByTestId('plan-step');
		await expect(steps).toHaveCount(2);
		// The card lists exactly what the dry run marked for removal, and nothing it keeps.
		await expect(steps.nth(0)).toContainText('backup_prune');
		await expect(steps.nth(0)).toContainText(volid(1));
		await expect(steps.nth(0)).toContainText(volid(2));
		await expect(steps.nth(0)).not.toContainText(volid(3));
		await expect(steps.nth(1)).toContainText("'vzdump' '101' '--storage' 'local'");
		await plan.screenshot({ path: 'test-results/incident-backup-plan-1280.png' });

		await llm.push(INCIDENT_A.reply);
		await plan.getByTestId('approve-plan').click();
		await expect(plan).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(60_000) });
		await expect(steps.nth(1)).toHaveAttribute('data-state', 'succeeded');
		await page.setViewportSize({ width: 390, height: 844 });
		await plan.scrollIntoViewIfNeeded();
		await page.screenshot({ path: 'test-results/incident-backup-done-390.png' });

		// The oracle: 3 and 4 stay, 1 and 2 are gone, one new backup of CT 101 is there and read back.
		const after = ((await readHealth(state)).backups?.local ?? []).map((v) => v.volid);
		const fresh = after.filter((v) => ![1, 2, 3, 4].map(volid).includes(v) && v.includes('-lxc-101-'));
		expect(fresh).toHaveLength(1);
		expect(after).toEqual(expect.arrayContaining([volid(3), volid(4), fresh[0]]));
		expect(after).not.toContain(volid(1));
		expect(after).not.toContain(volid(2));
		const runs = await sql<{ action: string; status: string; verdict: string | null }[]>`
			select action, status, verdict from executions where plan_id = ${planId} order by created_at`;
		expect(runs.map((r) => [r.action, r.status, r.verdict])).toEqual([
			['backup_prune', 'succeeded', 'verified'],
			['vzdump', 'succeeded', 'verified']
		]);
		// No operator message in the session: the webhook started it, one click approved it.
		expect((await sql`select 1 from messages where session_id = ${sessionId} and role = 'user'`).length).toBe(0);
		await sql`update alert_hooks set revoked_at = now() where id = ${hook.id}`;
	} finally {
		// The run shares this double: its storages and backups as they were (the incident's setup replaced the backups).
		await setHealthIn(state, { storages: before.storages ?? null, backups: before.backups ?? null });
	}
});
