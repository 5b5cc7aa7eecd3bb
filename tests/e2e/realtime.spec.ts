import { spawn, type ChildProcess } from 'node:child_process';
import { llmControl } from '../doubles/llm/client';
import { freePort } from '../helpers/ports';
import { login, test, expect } from './harness/fixtures';

let web2: ChildProcess | undefined;
let worker: ChildProcess | undefined;
let web2URL = '';

function waitFor(child: ChildProcess, text: string): Promise<void> {
	return new Promise((resolve, reject) => {
		let out = '';
		const timer = setTimeout(() => reject(new Error(`never saw "${text}":\n${out}`)), 60_000);
		const on = (d: Buffer) => {
			out += d.toString();
			if (out.includes(text)) {
				clearTimeout(timer);
				resolve();
			}
		};
		child.stdout!.on('data', on);
		child.stderr!.on('data', on);
		child.once('exit', (c) => reject(new Error(`exited ${c}:\n${out}`)));
	});
}

test.beforeAll(async ({ env }) => {
	const port = await freePort();
	web2URL = `http://127.0.0.1:${port}`;
	const common = {
		...process.env,
		DATABASE_URL: env.databaseUrl,
		NOMOS_INVENTORY_SYNC: 'off',
		OPENAI_BASE_URL: env.llmURL,
		OPENAI_API_KEY: 'e2e',
		NOMOS_MODEL: 'scripted'
	};
	// A second web process (no worker) and a standalone worker process on the same database.
	web2 = spawn(process.execPath, ['server.js'], {
		env: { ...common, NODE_ENV: 'production', PORT: String(port), NOMOS_WORKER: 'off' },
		stdio: ['ignore', 'pipe', 'pipe']
	});
	worker = spawn(process.execPath, ['--import', 'tsx', 'scripts/worker.ts'], { env: common, stdio: ['ignore', 'pipe', 'pipe'] });
	await Promise.all([waitFor(web2, 'listening on'), waitFor(worker, 'worker ready')]);
});

test.afterAll(async () => {
	for (const p of [web2, worker]) {
		if (!p || p.exitCode !== null) continue;
		const exited = new Promise((r) => p.once('exit', r));
		p.kill('SIGTERM');
		await exited;
	}
});

test('an event committed by another process reaches pages on both web processes without reload', async ({ browser, env, sql }) => {
	const a = await (await browser.newContext()).newPage();
	const b = await (await browser.newContext({ baseURL: web2URL })).newPage();
	await login(a, env.admin);
	await login(b, env.admin);
	// Both live streams are up (the page marks its fleet stream open) before committing.
	await expect(a.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');
	await expect(b.getByTestId('app-shell')).toHaveAttribute('data-live', 'true');

	const title = `Made elsewhere ${Date.now()}`;
	await sql.begin(async (tx) => {
		const [s] = await tx`insert into chat_sessions (title) values (${title}) returning id`;
		await tx`insert into tasks (session_id) values (${s.id})`;
		await tx`insert into events (session_id, type, payload) values (${s.id}, 'session.updated', '{"created":true}'::jsonb)`;
	});
	await expect(a.getByTestId('session-link').filter({ hasText: title })).toBeVisible();
	await expect(b.getByTestId('session-link').filter({ hasText: title })).toBeVisible();
});

test('a turn run by a worker in another process streams into a page served by the second web process', async ({ browser, env }) => {
	const llm = llmControl(env.llmURL);
	await llm.reset();
	// About 4 s of streaming (16 chunks, 250 ms apart): the page shows it before it ends, also on a busy machine.
	await llm.push({ text: 'Streaming from a worker process, token by token.', chunkSize: 3, delayMs: 250 });
	const b = await (await browser.newContext({ baseURL: web2URL })).newPage();
	await login(b, env.admin);
	// Every status an assistant message shows, as the page renders it (the send navigates in-page).
	await b.evaluate(() => {
		const w = window as unknown as { __statuses: string[] };
		w.__statuses = [];
		new MutationObserver(() => {
			for (const el of document.querySelectorAll('[data-testid="message"][data-role="assistant"]')) {
				const s = el.getAttribute('data-status') ?? '';
				if (w.__statuses.at(-1) !== s) w.__statuses.push(s);
			}
		}).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-status'] });
	});
	await b.getByTestId('composer-input').fill('hello from web 2');
	await b.getByTestId('send').click();
	const reply = b.locator('[data-testid="message"][data-role="assistant"]');
	await expect(reply).toContainText('Streaming from a worker process, token by token.');
	await expect(reply).toHaveAttribute('data-status', 'complete');
	// Seen while still streaming, then complete.
	const statuses = await b.evaluate(() => (window as unknown as { __statuses: string[] }).__statuses);
	expect(statuses.slice(statuses.indexOf('streaming'))).toEqual(['streaming', 'complete']);
});
