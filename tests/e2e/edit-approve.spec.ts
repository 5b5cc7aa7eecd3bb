import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

test('edit before approving: a bad value is flagged, the fixed edit runs, the card and the agent say what changed', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	const create = { vmid: '110', hostname: 'notes', template: TEMPLATE, cores: 1, memory: 2048, disk: 8, storage: 'local-lvm' };
	await llm.push(
		{ toolCalls: [{ name: 'request_execution', args: { target: 'strong', action: 'pct_create', params: create, reason: 'a CT for the notes app' } }] },
		{ text: 'Waiting for your approval to create CT 110.' },
		{ text: 'CT 110 is up with 4096 MiB, as you set.' }
	);
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('make a CT for notes');
	await page.getByTestId('send').click();

	const card = page.getByTestId('execution-card');
	await expect(card.getByTestId('command-preview')).toContainText("'--memory' '2048'");
	await card.getByTestId('edit').click();
	const form = card.getByTestId('edit-params');
	const memory = form.locator('[data-testid="edit-field"][data-field="memory"] input');
	await expect(memory).toHaveValue('2048');
	// The vmid names the target: shown, not editable.
	await expect(form.locator('[data-field="vmid"]')).toContainText('names the target, not editable');
	await expect(form.locator('[data-field="vmid"] input')).toHaveCount(0);

	await memory.fill('8');
	await expect(form.locator('[data-testid="field-error"][data-field="memory"]')).toHaveText('at least 16');
	await expect(form.getByTestId('approve-edited')).toBeDisabled();
	const hostname = form.locator('[data-testid="edit-field"][data-field="hostname"] input');
	await hostname.fill('Notes_App');
	await expect(form.locator('[data-testid="field-error"][data-field="hostname"]')).toContainText('lowercase letters, digits and dashes');
	await card.screenshot({ path: 'test-results/edit-approve-invalid.png' });

	await hostname.fill('notes');
	await memory.fill('4096');
	await expect(form.getByTestId('field-error')).toHaveCount(0);
	await expect(form.getByTestId('edit-changes')).toHaveText('Changes: memory 2048 → 4096');
	await expect(form.getByTestId('edit-preview')).toContainText("'--memory' '4096'");
	await page.setViewportSize({ width: 1280, height: 1500 });
	await card.screenshot({ path: 'test-results/edit-approve-form.png' });
	await form.getByTestId('approve-edited').click();

	await expect(card).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(card.getByTestId('execution-edited')).toHaveText('edited by admin: memory 2048 → 4096');
	await expect(card.getByTestId('command-preview')).toContainText("'--memory' '4096'");
	await expect(card.getByTestId('execution-step').first()).toContainText('pct create 110 (notes)');
	await expect(card.getByTestId('decision')).toContainText('approved by admin via button');
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('CT 110 is up with 4096 MiB', { timeout: scaled(30_000) });
	await page.screenshot({ path: 'test-results/edit-approve-done.png', fullPage: true });

	// What ran is the edited command; the agent heard the change.
	const [row] =
		await sql`select steps->0->>'command' as command, params->>'memory' as memory from executions where action = 'pct_create' and params->>'hostname' = 'notes'`;
	expect(row).toEqual({ command: expect.stringContaining("'--memory' '4096'"), memory: '4096' });
	const reqs = await llm.requests();
	expect(JSON.stringify(reqs.at(-1)!.body)).toContain('The operator changed memory 2048 → 4096 before approving');
});

test('on the Ops page: edit a pct_exec argv list, the edited command runs', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{ name: 'request_execution', args: { target: 'lxc:strong/100', action: 'pct_exec', params: { argv: ['echo', 'hello'] }, reason: 'say hello' } }
			]
		},
		{ text: 'Waiting for your approval.' },
		{ text: 'It printed what you set.' }
	);
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('say hello in caddy');
	await page.getByTestId('send').click();
	await expect(page.getByTestId('execution-card')).toBeVisible();

	await page.goto('/ops');
	const card = page.getByTestId('ops-pending').getByTestId('execution-card').filter({ hasText: 'say hello' });
	await card.getByTestId('edit').click();
	const form = card.getByTestId('edit-params');
	await expect(form.locator('[data-field="vmid"]')).toHaveCount(0);
	await form.getByLabel('argv 2', { exact: true }).fill('edited');
	await form.getByTestId('edit-list-add').click();
	await form.getByLabel('argv 3', { exact: true }).fill('again; id');
	await expect(form.getByTestId('edit-preview')).toHaveText("'pct' 'exec' '100' '--' 'echo' 'edited' 'again; id'");
	await form.getByTestId('approve-edited').click();

	const done = page.getByTestId('ops-recent').getByTestId('execution-card').filter({ hasText: 'say hello' }).first();
	await expect(done).toHaveAttribute('data-status', 'succeeded', { timeout: scaled(30_000) });
	await expect(done.getByTestId('execution-edited')).toHaveText('edited by admin: argv ["echo","hello"] → ["echo","edited","again; id"]');
	// The command's output (a snapshot step, and pruning, may stand beside it on snapshot-capable storage).
	await expect(done.getByTestId('step-output').filter({ hasText: 'edited again; id' })).toHaveCount(1);
	const [a] =
		await sql`select route, detail->'original'->>'hash' as original, detail->'edited'->>'hash' as edited from audit_log where action = 'execution.edited' order by id desc limit 1`;
	expect(a.route).toBe('ops');
	expect(a.original).not.toBe(a.edited);
});
