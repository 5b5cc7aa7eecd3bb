import { login, test, expect } from './harness/fixtures';

const BODY = [
	'## Zeppelin backups',
	'',
	'VM 101 snapshots go to **pbs** every night.',
	'',
	'- keep 7 daily',
	'- keep 4 weekly',
	'',
	'| guest | schedule |',
	'|-------|----------|',
	'| media | 02:00 |',
	'',
	'```bash',
	'proxmox-backup-client list',
	'```',
	'',
	'<script>window.__pwned = true</script>',
	'',
	'See [bad](javascript:alert(1)) and [docs](https://pbs.proxmox.com/docs/) <img src=x onerror="window.__pwned=true">'
].join('\n');

test('knowledge: add a Markdown note, preview, search, edit and delete it', async ({ page, env, sql }) => {
	await sql`delete from knowledge where title like 'E2E %'`;
	const [fileNote] = await sql<{ id: string }[]>`
		insert into knowledge (title, body, source, source_path)
		values ('E2E imported runbook', 'Restart the zeppelin exporter with systemctl.', 'file', 'e2e/runbook.md')
		returning id`;
	try {
		await login(page, env.admin);
		await page.getByTestId('sidebar').getByRole('link', { name: 'Knowledge', exact: true }).click();
		await expect(page.getByTestId('knowledge-page')).toBeVisible();

		// The imported note is read-only.
		const fileRow = page.getByTestId('knowledge-row').filter({ hasText: 'E2E imported runbook' });
		await expect(fileRow.getByTestId('knowledge-source')).toHaveText('file');
		await expect(fileRow).toContainText('read-only · e2e/runbook.md');
		await expect(fileRow.getByTestId('edit-note')).toHaveCount(0);

		// Add a note; the preview renders Markdown and neutralises HTML and bad links.
		await page.getByTestId('add-note').click();
		const form = page.getByTestId('knowledge-form');
		await form.getByLabel('Title').fill('E2E Backups on strong');
		await form.getByLabel('Markdown').fill(BODY);
		const preview = form.getByTestId('knowledge-preview');
		await expect(preview.getByRole('heading', { name: 'Zeppelin backups' })).toBeVisible();
		await expect(preview.locator('li')).toHaveCount(2);
		await expect(preview.locator('table td').first()).toHaveText('media');
		await expect(preview.locator('pre code')).toHaveText('proxmox-backup-client list');
		await expect(preview).toContainText('<script>window.__pwned = true</script>');
		await expect(preview.getByRole('link', { name: 'docs' })).toHaveAttribute('rel', 'noopener noreferrer');
		await expect(preview.getByRole('link', { name: 'bad' })).toHaveCount(0);
		await page.screenshot({ path: 'test-results/knowledge-form.png', fullPage: true });
		await form.getByRole('button', { name: 'Add note' }).click();
		await expect(form).toHaveCount(0);

		const row = page.getByTestId('knowledge-row').filter({ hasText: 'E2E Backups on strong' });
		await expect(row.getByTestId('knowledge-source')).toHaveText('note');
		const body = row.getByTestId('knowledge-body');
		await expect(body.getByRole('heading', { name: 'Zeppelin backups' })).toBeVisible();
		await expect(body.locator('strong')).toHaveText('pbs');
		expect(await page.evaluate(() => (window as unknown as { __pwned?: boolean }).__pwned)).toBeUndefined();

		// Search: the note and the imported file, with highlighted snippets.
		await page.getByTestId('knowledge-search').fill('zeppelin');
		const results = page.getByTestId('knowledge-result');
		await expect(results).toHaveCount(2);
		await expect(results.first()).toContainText('E2E Backups on strong');
		await expect(results.first().locator('mark').first()).toHaveText(/zeppelin/i);
		await expect(results.nth(1)).toContainText('E2E imported runbook');
		await page.screenshot({ path: 'test-results/knowledge-page.png', fullPage: true });
		await page.getByTestId('theme-toggle').click();
		await row.getByTestId('knowledge-body').scrollIntoViewIfNeeded();
		await page.screenshot({ path: 'test-results/knowledge-note-dark.png' });
		await page.getByTestId('theme-toggle').click();

		// Collapse the row, then open it again from the search result.
		await row.getByTestId('knowledge-title').click();
		await expect(body).toHaveCount(0);
		await results.first().getByRole('button').click();
		await expect(row.getByTestId('knowledge-body')).toBeVisible();

		// Edit.
		await row.getByTestId('edit-note').click();
		const editForm = page.getByTestId('knowledge-form');
		await expect(editForm.getByLabel('Title')).toHaveValue('E2E Backups on strong');
		await editForm.getByLabel('Title').fill('E2E Backups (PBS)');
		await editForm.getByLabel('Markdown').fill('Backups moved to *tape* on Sundays.');
		await editForm.getByRole('button', { name: 'Save' }).click();
		const edited = page.getByTestId('knowledge-row').filter({ hasText: 'E2E Backups (PBS)' });
		await expect(edited).toBeVisible();
		await expect(edited.getByTestId('knowledge-body').locator('em')).toHaveText('tape');
		// The open search re-runs: the old words are gone from the note.
		await expect(results).toHaveCount(1);
		await page.getByTestId('knowledge-search').fill('tape');
		await expect(results.first()).toContainText('E2E Backups (PBS)');
		await expect(results.first().locator('mark')).toHaveText('tape');

		// A readable error: an empty title.
		await edited.getByTestId('edit-note').click();
		await page.getByTestId('knowledge-form').getByLabel('Title').fill('');
		await page.getByTestId('knowledge-form').getByRole('button', { name: 'Save' }).click();
		await expect(page.getByTestId('knowledge-form').getByRole('alert')).toContainText('give the note a title');
		await page.getByTestId('knowledge-form').getByRole('button', { name: 'Cancel' }).click();

		// Delete, with a confirmation.
		await edited.getByTestId('delete-note').click();
		await expect(edited.getByTestId('confirm-delete')).toContainText('Delete “E2E Backups (PBS)”?');
		await edited.getByTestId('confirm-delete').getByRole('button', { name: 'Delete' }).click();
		await expect(page.getByTestId('knowledge-row').filter({ hasText: 'E2E Backups (PBS)' })).toHaveCount(0);
		await expect(results).toHaveCount(0);
		await expect(page.getByTestId('knowledge-results')).toContainText('Nothing matched');

		await page.getByTestId('theme-toggle').click();
		await page.getByTestId('knowledge-search').fill('zeppelin');
		await expect(results).toHaveCount(1);
		await fileRow.getByTestId('knowledge-title').click();
		await expect(fileRow.getByTestId('knowledge-body')).toContainText('systemctl');
		await page.screenshot({ path: 'test-results/knowledge-dark.png', fullPage: true });
		await page.getByTestId('theme-toggle').click();
	} finally {
		await sql`delete from knowledge where id = ${fileNote.id} or title like 'E2E %'`;
	}
});

test('a link with ?q= (the question panel’s entity chips) opens the page with that search', async ({ page, env, sql }) => {
	await sql`delete from knowledge where title like 'E2E %'`;
	await sql`insert into knowledge (title, body, source) values ('E2E caddy notes', 'caddy fronts the exporter on CT 104.', 'page')`;
	try {
		await login(page, env.admin);
		await page.goto('/knowledge?q=exporter');
		await expect(page.getByTestId('knowledge-search')).toHaveValue('exporter');
		await expect(page.getByTestId('knowledge-result')).toHaveCount(1);
		await expect(page.getByTestId('knowledge-result')).toContainText('E2E caddy notes');
	} finally {
		await sql`delete from knowledge where title like 'E2E %'`;
	}
});
