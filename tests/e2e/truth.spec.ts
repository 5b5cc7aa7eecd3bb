// What the operator sees when a mutation is cancelled mid-step: "cancelling…" at once, then
// interrupted with what it left on the host, and the agent told to look before acting.
import { llmControl } from '../doubles/llm/client';
import { setFaultIn } from '../doubles/proxmox/state';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

test('Cancel during a hung pct create: cancelling at once, interrupted in seconds, leftovers shown and told to the agent', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	const create = { vmid: '151', hostname: 'hangs', template: TEMPLATE, cores: 1, memory: 512, disk: 4, storage: 'local-lvm' };
	await llm.push(
		{ toolCalls: [{ name: 'request_execution', args: { target: 'strong', action: 'pct_create', params: create, reason: 'a scratch CT' } }] },
		{ text: 'Waiting for your approval.' },
		{ toolCalls: [{ name: 'get_lxc_state', args: { name: 'strong/151' } }] },
		{ text: 'The create was interrupted: CT 151 exists, stopped and locked. I can unlock and destroy it if you approve.' }
	);
	await setFaultIn(env.proxmox.stateDir, 'create', 'hang');
	try {
		await login(page, env.admin);
		await page.getByTestId('composer-input').fill('make me a scratch container');
		await page.getByTestId('send').click();
		const card = page.getByTestId('execution-card');
		await expect(page.getByTestId('session-state')).toHaveText('Waiting for your approval (1)');
		await card.getByTestId('approve').click();
		await expect(card).toHaveAttribute('data-status', 'running', { timeout: scaled(20_000) });
		await expect(card.getByTestId('execution-step').first()).toContainText('pct create 151');
		await expect(page.getByTestId('session-state')).toHaveText('Running pct_create on host:strong…');
		// The create is under way on the host (its first line: the volume exists) before Cancel.
		await expect(card.getByTestId('step-output').first()).toContainText('Logical volume "vm-151-disk-0" created.');
		await card.getByTestId('cancel-execution').click();
		// At once: "cancelling" while the runner stops the command, or already "interrupted" when it
		// stopped it before the page looked (the pill's intermediate state can be shorter than a poll).
		await expect(card.getByTestId('status-pill')).toHaveText(/^(cancelling|interrupted)$/, { timeout: scaled(1_000) });
		await expect(card).toHaveAttribute('data-status', 'interrupted', { timeout: scaled(3_000) });
		await expect(card.getByTestId('execution-interrupted')).toContainText('may have partly run');
		await expect(card.getByTestId('execution-leftovers')).toHaveText('Left behind: CT 151 exists on strong, stopped, locked: create');
		await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('CT 151 exists, stopped and locked', {
			timeout: scaled(20_000)
		});
		await expect(page.getByTestId('session-state')).toHaveText('Idle');
		await page.screenshot({ path: 'test-results/truth-interrupted.png', fullPage: true });
		const reqs = await llm.requests();
		const told = JSON.stringify(reqs[2].body);
		expect(told).toContain('interrupted: cancelled by the operator while pct create');
		expect(told).toContain('Left behind: CT 151 exists on strong, stopped, locked: create');
	} finally {
		await setFaultIn(env.proxmox.stateDir, 'create', null);
	}
	await expect.poll(async () => (await llm.state()).pending, { timeout: scaled(20_000) }).toBe(0);
});

test('when no worker is alive the chat and Ops pages say so, live, and stop saying it when one is back', async ({ page, env, sql }) => {
	await login(page, env.admin);
	await page.goto('/ops');
	await expect(page.getByTestId('ops-page')).toBeVisible();
	await expect(page.getByTestId('no-worker')).toHaveCount(0);
	// As if the only worker process had died: its heartbeat is old, and the web process's check
	// said so (it emits workers.changed). The in-process worker's next beat (every 10 s) revives it.
	// A beat landing between the update and the page's re-count revives it before the banner shows
	// (seen in a CI run): age the heartbeats again until the page has seen none alive.
	await expect(async () => {
		await sql`update worker_processes set beat_at = now() - interval '1 hour'`;
		await sql`insert into events (type, payload) values ('workers.changed', '{"alive":0}'::jsonb)`;
		await expect(page.getByTestId('no-worker')).toBeVisible({ timeout: 3_000 });
	}).toPass({ timeout: scaled(30_000) });
	await expect(page.getByTestId('no-worker')).toContainText('npm run worker');
	await page.screenshot({ path: 'test-results/truth-no-worker.png', fullPage: true });
	await expect(page.getByTestId('no-worker')).toHaveCount(0, { timeout: scaled(40_000) });
});
