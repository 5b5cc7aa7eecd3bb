import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

const HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1"> caddy TLS notes';

test('the approval card shows what depends on the CT before a restart: summary, then details with links', async ({ page, env, sql }) => {
	// CT 100 "caddy" on strong is in the inventory (the double's seed).
	await expect
		.poll(async () => (await sql`select 1 from entities where kind = 'lxc' and external_id = 'strong/100'`).length, { timeout: scaled(20_000) })
		.toBe(1);
	const notes = await sql<{ id: string; title: string }[]>`
		insert into knowledge (title, body, source) values
			('BR runbook: reverse proxy', 'CT 100 terminates TLS for every app; restart it only at night.', 'page'),
			('BR DNS', 'caddy.lan:443 is the entry point for the media and backup apps.', 'page'),
			(${HOSTILE}, 'Certificates renew through caddy.', 'page'),
			('BR unrelated', 'CT 1000 and ct10 are somewhere else.', 'page')
		returning id, title`;
	await sql`update entities set notes = 'streams through https://caddy.lan/jellyfin' where kind = 'lxc' and external_id = 'strong/101'`;
	const [past] = await sql<{ id: string }[]>`
		insert into executions (host_name, target, action, params, classification, hash, status, created_at)
		values ('strong', 'lxc:strong/100', 'systemctl', '{"unit":"caddy.service","op":"reload"}', 'config_mutation', md5(random()::text), 'succeeded', now() - interval '2 days')
		returning id`;
	try {
		const llm = llmControl(env.llmURL);
		await llm.push(
			{ toolCalls: [{ name: 'request_execution', args: { target: 'lxc:strong/100', action: 'restart', params: {}, reason: 'apply the new Caddyfile' } }] },
			{ text: 'Waiting for your approval to restart caddy.' }
		);
		await login(page, env.admin);
		await page.getByTestId('composer-input').fill('restart caddy');
		await page.getByTestId('send').click();

		const card = page.getByTestId('execution-card');
		const radius = card.getByTestId('blast-radius');
		await expect(radius.getByTestId('blast-radius-summary')).toHaveText(/^running · \d+ services? · \d+ notes · 1 CT references it$/);
		await expect(card.getByTestId('blast-radius-details')).toBeHidden();

		await card.screenshot({ path: 'test-results/blast-radius-collapsed.png' });
		await radius.getByTestId('blast-radius-summary').click();
		const details = card.getByTestId('blast-radius-details');
		await expect(details).toBeVisible();
		await expect(details).toContainText('caddy is running');
		await expect(details.getByTestId('blast-radius-service').filter({ hasText: 'caddy.service' })).toHaveText(
			/caddy\.service\s+last: systemctl reload, succeeded/
		);
		const noteLinks = details.getByTestId('blast-radius-note');
		await expect(noteLinks.filter({ hasText: 'BR runbook: reverse proxy' })).toContainText('mentions CT 100');
		await expect(noteLinks.filter({ hasText: 'BR DNS' })).toContainText('mentions caddy');
		await expect(noteLinks.filter({ hasText: 'BR unrelated' })).toHaveCount(0);
		// Untrusted text stays text: the title shows verbatim and no element came out of it.
		await expect(noteLinks.filter({ hasText: HOSTILE })).toHaveCount(1);
		await expect(card.locator('img')).toHaveCount(0);
		expect(await page.evaluate(() => document.body.dataset.pwned)).toBeUndefined();
		await expect(details.getByTestId('blast-radius-reference')).toHaveText(/lxc:strong\/101\s+media\s+running\s+— its notes mention caddy/);
		await expect(noteLinks.filter({ hasText: 'BR runbook' }).getByRole('link')).toHaveAttribute('href', `/knowledge#note-${notes[0].id}`);

		// An open card follows the inventory: after the next sync it counts CT 102 too.
		await sql`update entities set notes = 'nightly dumps go to caddy.lan/backups' where kind = 'lxc' and external_id = 'strong/102'`;
		const sync = await page.request.post('/trpc/hosts.sync', { data: {}, headers: { origin: new URL(page.url()).origin } });
		expect(sync.ok()).toBe(true);
		await expect(radius.getByTestId('blast-radius-summary')).toHaveText(/· 2 CTs reference it$/, { timeout: scaled(20_000) });
		await expect(details.getByTestId('blast-radius-reference').filter({ hasText: 'lxc:strong/102' })).toContainText('backup stopped');
		await card.screenshot({ path: 'test-results/blast-radius-card.png' });

		// The agent was told the one-line summary with the request's result.
		const reqs = await llm.requests();
		expect(JSON.stringify(reqs[1].body)).toMatch(/lxc:strong\/100: running · \d+ services? · \d+ notes · 1 CT references it/);

		// The Ops page's pending list shows it too; the note link opens the note on the knowledge page.
		// Other specs of the run may leave cards pending there: this one is found by its id.
		const id = await card.getAttribute('data-execution-id');
		await page.goto('/ops');
		const pending = page.getByTestId('ops-pending').locator(`[data-testid="execution-card"][data-execution-id="${id}"]`);
		await expect(pending.getByTestId('blast-radius-summary')).toHaveText(/^running · \d+ services? · \d+ notes · 2 CTs reference it$/);
		await pending.getByTestId('blast-radius-summary').click();
		await pending.getByTestId('blast-radius-note').filter({ hasText: 'BR runbook' }).getByRole('link').click();
		await expect(page).toHaveURL(new RegExp(`/knowledge#note-${notes[0].id}$`));
		await expect(page.locator(`#note-${notes[0].id}`)).toBeInViewport();

		await page.goto('/ops');
		await pending.getByTestId('deny').click();
		await pending.getByTestId('confirm-deny').click();
		await expect(pending).toHaveCount(0);
	} finally {
		await sql`delete from knowledge where id = any(${notes.map((n) => n.id)}::uuid[])`;
		await sql`update entities set notes = '' where kind = 'lxc' and external_id in ('strong/101', 'strong/102')`;
		await sql`delete from executions where id = ${past.id}`;
	}
});
