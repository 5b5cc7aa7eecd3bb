import { llmControl } from '../doubles/llm/client';
import { login, test, expect } from './harness/fixtures';

test.beforeEach(async ({ env }) => {
	await llmControl(env.llmURL).reset();
});

test('ask_operator pauses the task, the panel answer resumes it live; a chat reply answers the next one', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.push(
		{
			toolCalls: [
				{
					name: 'ask_operator',
					args: {
						prompt: 'Which host should run TypeType?',
						why: 'Both hosts have room and only you know which one you want to keep free.',
						options: ['strong', 'weak'],
						context_entities: ['host:strong']
					}
				}
			]
		},
		{ text: 'Understood: TypeType goes on **host:strong**.' },
		{ toolCalls: [{ name: 'ask_operator', args: { prompt: 'How much memory should it get?' } }] },
		{ text: 'OK, 2 GB it is.' }
	);
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('deploy TypeType');
	await page.getByTestId('send').click();

	const panel = page.getByTestId('question-panel');
	await expect(panel.getByTestId('question-prompt')).toHaveText('Which host should run TypeType?');
	await expect(panel.getByTestId('question-why')).toContainText('only you know');
	await expect(panel.getByTestId('question-option')).toHaveText(['strong', 'weak']);
	await expect(panel.getByTestId('question-entity')).toHaveText('host:strong');
	// The question is also the assistant's visible message.
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').first()).toContainText('Which host should run TypeType?');
	const sessionId = page.url().split('/').pop()!;
	const [task] = await sql`select state from tasks where session_id = ${sessionId}`;
	expect(task.state).toBe('awaiting_input');
	await expect(page.getByTestId('question-badge')).toBeVisible();
	// No model call after ask_operator within that turn.
	expect((await llm.requests()).length).toBe(1);

	// An answer through the REST endpoint (as an API client sends it): 202 at once, the reply arrives live.
	const [q] = await sql`select id from session_questions where session_id = ${sessionId} and status = 'open'`;
	const res = await page.request.post(`/sessions/${sessionId}/questions/${q.id}/answer`, {
		headers: { origin: env.baseURL },
		data: { answer: 'strong' }
	});
	expect(res.status()).toBe(202);
	await expect(page.getByTestId('question-panel')).toHaveCount(0);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').nth(1)).toContainText('TypeType goes on host:strong');
	const again = await page.request.post(`/sessions/${sessionId}/questions/${q.id}/answer`, { headers: { origin: env.baseURL }, data: { answer: 'weak' } });
	expect(again.status()).toBe(409);
	const empty = await page.request.post(`/sessions/${sessionId}/questions/${q.id}/answer`, { headers: { origin: env.baseURL }, data: { answer: '  ' } });
	expect(empty.status()).toBe(400);
	const unknown = await page.request.post(`/sessions/${sessionId}/questions/00000000-0000-4000-8000-000000000000/answer`, {
		headers: { origin: env.baseURL },
		data: { answer: 'x' }
	});
	expect(unknown.status()).toBe(404);

	// A second question, answered by a plain chat reply.
	await page.getByTestId('composer-input').fill('and ask me about memory');
	await page.getByTestId('send').click();
	await expect(page.getByTestId('question-prompt')).toHaveText('How much memory should it get?');
	await page.getByTestId('composer-input').fill('2 GB');
	await page.getByTestId('send').click();
	await expect(page.getByTestId('question-panel')).toHaveCount(0);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('2 GB it is');
	const rows = await sql`select answer, answered_via from session_questions where session_id = ${sessionId} order by created_at`;
	expect(rows.map((r) => [r.answer, r.answered_via])).toEqual([
		['strong', 'rest'],
		['2 GB', 'chat']
	]);
	// The reply's first words show while the turn is still finishing; the task completes with it.
	await expect.poll(async () => (await sql`select state from tasks where session_id = ${sessionId}`)[0].state).toBe('completed');
});

test('the panel buttons answer too, and the Ops page lists open questions', async ({ page, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.push({ toolCalls: [{ name: 'ask_operator', args: { prompt: 'Keep the old backups?', options: ['keep', 'delete'] } }] }, { text: 'Keeping them.' });
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('clean up backups');
	await page.getByTestId('send').click();
	await expect(page.getByTestId('question-prompt')).toHaveText('Keep the old backups?');
	const chatUrl = page.url();
	await page.goto('/ops');
	await expect(page.getByTestId('ops-question').filter({ hasText: 'Keep the old backups?' })).toHaveCount(1);
	await page.goto(chatUrl);
	await page.getByTestId('question-option').filter({ hasText: 'keep' }).click();
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('Keeping them.');
	await page.goto('/ops');
	await expect(page.getByTestId('ops-question').filter({ hasText: 'Keep the old backups?' })).toHaveCount(0);
});

test('the answer box, found by its label, answers in the operator’s own words', async ({ page, env, sql }) => {
	const llm = llmControl(env.llmURL);
	await llm.push({ toolCalls: [{ name: 'ask_operator', args: { prompt: 'Which VLAN should it join?', options: ['10', '20'] } }] }, { text: 'VLAN 30 it is.' });
	await login(page, env.admin);
	await page.getByTestId('composer-input').fill('put it on the network');
	await page.getByTestId('send').click();
	const panel = page.getByTestId('question-panel');
	await expect(panel.getByTestId('question-prompt')).toHaveText('Which VLAN should it join?');
	const box = panel.getByLabel('Your answer');
	await expect(box).toHaveAttribute('data-testid', 'question-answer');
	await box.fill('30, the lab one');
	await panel.getByRole('button', { name: 'Answer', exact: true }).click();
	await expect(panel).toHaveCount(0);
	await expect(page.locator('[data-testid="message"][data-role="assistant"]').last()).toContainText('VLAN 30 it is.');
	const sessionId = page.url().split('/').pop()!;
	const [row] = await sql`select answer, answered_via from session_questions where session_id = ${sessionId}`;
	expect(row).toMatchObject({ answer: '30, the lab one', answered_via: 'panel' });
});
