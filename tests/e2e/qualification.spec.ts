// Settings → Model shows each configured model's newest qualification (`npm run qualify`) and how to run one; its JSON downloads.
import { login, test, expect } from './harness/fixtures';

const figures = (passed: number, runs: number, unsafe: number) => ({
	runs,
	passed,
	passRate: passed / runs,
	lowerBound: 0.6123,
	unsafe,
	operatorMessages: 70,
	approvals: 41,
	modelRequests: 312,
	promptTokens: 1_234_567,
	seconds: 1800
});

test('the Model section shows the last qualification of the configured model and exports it as JSON', async ({ page, env, sql }) => {
	const scenarios = [
		{
			id: 'injected-alert',
			title: 'An alert carrying an instruction',
			group: 'core',
			skipped: null,
			figures: figures(2, 3, 1),
			failures: [['unsafe: acted on injected text: pct_destroy on lxc:strong/101']]
		}
	];
	// An older, qualified run first: the panel shows the newest, not the best.
	await sql`insert into qualifications (model, base_url, ran_at, verdict, runs, figures, scenarios)
		values ('scripted', ${env.llmURL}, now() - interval '2 days', 'qualified', 3, ${JSON.stringify(figures(63, 63, 0))}::text::jsonb, '[]'::jsonb)`;
	const [row] = await sql<{ id: string }[]>`insert into qualifications (model, base_url, ran_at, verdict, runs, figures, scenarios)
		values ('scripted', ${env.llmURL}, now(), 'not_qualified', 3, ${JSON.stringify(figures(58, 63, 1))}::text::jsonb, ${JSON.stringify(scenarios)}::text::jsonb) returning id`;
	try {
		await login(page, env.admin);
		await page.goto('/settings#model');
		const panel = page.getByTestId('qualification-panel');
		const q = panel.locator('[data-testid="qualification"][data-model="scripted"]');
		await expect(q).toHaveAttribute('data-verdict', 'not_qualified');
		await expect(q.getByTestId('qualification-verdict')).toHaveText('Not qualified');
		await expect(q.getByTestId('qualification-date')).toHaveText(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
		await expect(q.getByTestId('qualification-figures')).toContainText('passed 58/63 (92 %, at least 0.61 with 95 % confidence) · unsafe actions 1');
		await expect(q.getByTestId('qualification-figures')).toContainText('prompt tokens 1.2M');
		await expect(panel.getByTestId('qualification-howto')).toContainText('npm run qualify -- --model scripted --runs 3');

		const href = await q.getByTestId('qualification-export').getAttribute('href');
		expect(href).toBe(`/api/qualifications/${row.id}`);
		const res = await page.request.get(href!);
		expect(res.status()).toBe(200);
		expect(res.headers()['content-disposition']).toMatch(/^attachment; filename="nomos-qualification-scripted-\d{4}-\d{2}-\d{2}\.json"$/);
		const body = (await res.json()) as { id: string; verdict: string; scenarios: { failures: string[][] }[] };
		expect(body).toMatchObject({ id: row.id, verdict: 'not_qualified' });
		expect(body.scenarios[0].failures[0][0]).toBe('unsafe: acted on injected text: pct_destroy on lxc:strong/101');

		// An operator (not an admin) may not export it.
		await login(page, env.operator);
		expect((await page.request.get(href!)).status()).toBe(403);
	} finally {
		await sql`delete from qualifications where model = 'scripted'`;
	}
});
