// `npm run bench:loop` part 1 — the waits one operator feels, through the real app in a real
// browser (issue #15): send → the approval card is there, Approve → the first command reaches the
// host, the command ends → the agent's first words, an answer → the agent's first words.
//
//   1. starts the built app (`node server.js`, embedded Postgres in a temp data dir, worker on),
//      the SSH Proxmox double (node `strong`, one stopped CT per run) and the scripted model
//      (OpenAI-compatible, over HTTP), and Chromium through Playwright;
//   2. measures the floor first: --runs fresh SSH handshakes (TCP + key exchange + auth) to the
//      double with the app's own `connect`;
//   3. then --runs times, each in a new chat: types "start CT n" and clicks Send; the model asks
//      for pct_start; clicks the card's Approve; the command runs; the continuation's first text
//      streams in together with an ask_operator question; clicks an option; the answer's first
//      text streams in.
//
// Times come from where they happen: clicks and "visible" from the page (a capture-phase click
// listener and a MutationObserver, epoch ms), commands from the SSH double (when the exec
// request arrived, when its exit status was sent). Same machine, same clock. Prints p50 / p99.
//
//   npm run bench:loop -- --runs 20
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium, type Browser, type Page } from '@playwright/test';
import postgres from 'postgres';
import { connect } from '../src/lib/server/ssh/client';
import { startScriptedLlm, type ScriptedLlm } from '../tests/doubles/llm/server';
import { startProxmoxDouble, type ProxmoxDouble } from '../tests/doubles/proxmox/server';
import { freePort } from '../tests/helpers/ports';
import { CHROMIUM_ARGS, findBrowser } from '../scripts/browser.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(ROOT);
const { values: opts } = parseArgs({ options: { runs: { type: 'string', default: '20' } }, strict: false });
const RUNS = Math.max(1, Number(opts.runs) || 20);
const FIRST_VMID = 300;
const OPERATOR = { username: 'bench', password: 'bench-password-1234' };

const log = (s: string) => console.log(`[bench] ${s}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loadAverage = () =>
	os
		.loadavg()
		.map((x) => x.toFixed(2))
		.join(' ');

let tmp: string | undefined;
let app: ChildProcess | undefined;
let llm: ScriptedLlm | undefined;
let pve: ProxmoxDouble | undefined;
let browser: Browser | undefined;
let db: postgres.Sql | undefined;

async function cleanup(): Promise<void> {
	await browser?.close().catch(() => undefined);
	await db?.end().catch(() => undefined);
	if (app && app.exitCode === null) {
		const exited = new Promise((r) => app!.once('exit', r));
		app.kill('SIGTERM');
		await Promise.race([exited, sleep(15_000)]);
		if (app.exitCode === null) app.kill('SIGKILL');
	}
	await llm?.close().catch(() => undefined);
	await pve?.close().catch(() => undefined);
	if (tmp) await fs.rm(tmp, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void cleanup().finally(() => process.exit(130)));

// ----------------------------------------------------------------------- page instrumentation

/**
 * Runs in every document of the page: reports (name, epoch ms) through the `__mark` binding for
 * clicks on elements with a data-testid, each approval card's Approve button and each question
 * panel as they appear, and each `«<run><letter>»` marker (at the start of every scripted text)
 * as it first appears in an assistant message. A MutationObserver stamps the DOM change itself,
 * not when anybody looked.
 */
// A string, not a function: tsx's transform would wrap a function's inner functions in helpers
// that do not exist in the page.
const INSTRUMENT = `(() => {
	const now = () => performance.timeOrigin + performance.now();
	const seen = new Set();
	const mark = (name, at) => {
		if (seen.has(name)) return;
		seen.add(name);
		void window.__mark(name, at);
	};
	document.addEventListener('click', (e) => {
		const el = e.target && e.target.closest ? e.target.closest('[data-testid]') : null;
		if (el) void window.__mark('click:' + el.getAttribute('data-testid'), now());
	}, true);
	const scan = () => {
		const at = now();
		for (const card of document.querySelectorAll('[data-testid="execution-card"][data-status="awaiting_approval"]')) {
			const vmid = (card.textContent || '').match(/pct' 'start' '(\\d+)'/);
			if (vmid && card.querySelector('[data-testid="approve"]')) mark('approval:' + vmid[1], at);
		}
		for (const p of document.querySelectorAll('[data-testid="question-prompt"]')) {
			const run = (p.textContent || '').match(/run-(\\d+)/);
			if (run) mark('question:' + run[1], at);
		}
		for (const m of document.querySelectorAll('[data-testid="message"][data-role="assistant"]')) {
			for (const t of (m.textContent || '').match(/«\\d+[a-z]»/g) || []) mark('text:' + t, at);
		}
	};
	new MutationObserver(scan).observe(document, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['data-status'] });
})();`;

const marks = new Map<string, number>();
async function waitMark(name: string, timeoutMs = 30_000): Promise<number> {
	const until = Date.now() + timeoutMs;
	for (;;) {
		const at = marks.get(name);
		if (at !== undefined) return at;
		if (Date.now() > until) throw new Error(`no "${name}" within ${timeoutMs / 1000} s`);
		await sleep(5);
	}
}

// ------------------------------------------------------------------------------------ figures

function quantiles(xs: number[]) {
	const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
	const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? NaN;
	return { n: s.length, p50: q(0.5), p99: q(0.99), min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN };
}
const fmt = (x: number) => (Number.isFinite(x) ? String(Math.round(x)) : '—');

// ---------------------------------------------------------------------------------------- run

async function startApp(dataDir: string, port: number, pgPort: number): Promise<void> {
	// Builds when build/ is stale, or waits for a build another process runs (its lock).
	if (spawnSync(process.execPath, ['scripts/ensure-build.js'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('the build failed');
	app = spawn(process.execPath, ['server.js'], {
		cwd: ROOT,
		env: {
			...process.env,
			NODE_ENV: 'production',
			PORT: String(port),
			HOST: '127.0.0.1',
			NOMOS_DATA_DIR: dataDir,
			NOMOS_PG_PORT: String(pgPort),
			DATABASE_URL: '',
			NOMOS_WORKER: 'on',
			NOMOS_INVENTORY_SYNC: 'on',
			NOMOS_OPERATOR_USERNAME: OPERATOR.username,
			NOMOS_OPERATOR_PASSWORD: OPERATOR.password,
			NOMOS_KNOWLEDGE_DIR: '',
			OPENAI_BASE_URL: llm!.baseURL,
			OPENAI_API_KEY: 'bench',
			NOMOS_MODEL: 'scripted',
			NOMOS_HOSTS: JSON.stringify([
				{ name: pve!.nodeName, address: '127.0.0.1', port: pve!.port, user: 'root', keyPath: pve!.clientKeyPath, hostKeyFingerprint: pve!.hostKeyFingerprint }
			])
		},
		stdio: ['ignore', 'pipe', 'pipe']
	});
	let out = '';
	if (process.env.BENCH_APP_LOG) {
		const file = createWriteStream(process.env.BENCH_APP_LOG);
		app.stdout!.pipe(file);
		app.stderr!.pipe(file);
	}
	app.stdout!.on('data', (d) => (out += d));
	app.stderr!.on('data', (d) => (out += d));
	const until = Date.now() + 60_000;
	for (;;) {
		const r = await fetch(`http://127.0.0.1:${port}/login`).catch(() => null);
		if (r?.status === 200) break;
		if (app.exitCode !== null || Date.now() > until) throw new Error(`the app did not start:\n${out}`);
		await sleep(50);
	}
}

async function main(): Promise<void> {
	log(`runs ${RUNS}; ${os.cpus().length} CPUs, load average ${loadAverage()}`);
	tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-bench-latency-'));
	await fs.chmod(tmp, 0o755); // Postgres runs as its own user when we are root
	llm = await startScriptedLlm();
	pve = await startProxmoxDouble({
		stateDir: path.join(tmp, 'pve'),
		seed: Array.from({ length: RUNS }, (_, i) => ({ vmid: FIRST_VMID + i, hostname: `ct-${i}`, status: 'stopped' as const }))
	});
	const port = await freePort();
	const pgPort = await freePort();
	const dataDir = path.join(tmp, 'data');
	await startApp(dataDir, port, pgPort);
	const base = `http://127.0.0.1:${port}`;
	const password = readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
	db = postgres(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/postgres`, { max: 1, onnotice: () => undefined });
	for (const until = Date.now() + 60_000; ;) {
		const [r] = await db<{ n: number }[]>`select count(*)::int as n from entities where kind = 'lxc'`;
		if (r.n === RUNS) break;
		if (Date.now() > until) throw new Error(`the first inventory sync did not finish (${r.n}/${RUNS} containers)`);
		await sleep(100);
	}

	// The floor: a fresh authenticated SSH connection, as the app opens one.
	const target = {
		name: pve.nodeName,
		address: '127.0.0.1',
		port: pve.port,
		username: 'root',
		keyPath: pve.clientKeyPath,
		hostKeyFingerprint: pve.hostKeyFingerprint
	};
	const handshakes: number[] = [];
	for (let i = 0; i < RUNS; i++) {
		const t0 = performance.now();
		const c = await connect(target);
		handshakes.push(performance.now() - t0);
		c.end();
	}

	const found = findBrowser();
	if (found.kind === 'none') throw new Error(`no Chromium: ${found.reason} (npm test installs one; or set NOMOS_CHROMIUM)`);
	browser = await chromium.launch(found.kind === 'system' ? { executablePath: found.path, args: CHROMIUM_ARGS } : {});
	const context = await browser.newContext({ baseURL: base });
	await context.exposeBinding('__mark', (_src, name: string, at: number) => {
		if (!marks.has(name)) marks.set(name, at);
	});
	await context.addInitScript(INSTRUMENT);
	const page: Page = await context.newPage();
	await page.goto('/login');
	await page.getByLabel('Username').fill(OPERATOR.username);
	await page.getByLabel('Password').fill(OPERATOR.password);
	await page.getByRole('button', { name: 'Sign in' }).click();
	await page.getByTestId('sidebar').waitFor();

	const rows = {
		sendToApproval: [] as number[],
		sendToModel: [] as number[],
		approveToCommand: [] as number[],
		approveToStep: [] as number[],
		endToText: [] as number[],
		endToModel: [] as number[],
		endCommands: [] as number[],
		answerToText: [] as number[],
		answerToModel: [] as number[],
		modelToText: [] as number[]
	};
	/** When the model double received the first chat request after `t`. */
	const modelRequestAfter = (t: number) => llm!.requests.find((r) => r.path.endsWith('/chat/completions') && r.receivedAt >= t)?.receivedAt ?? NaN;
	for (let i = 0; i < RUNS; i++) {
		const vmid = FIRST_VMID + i;
		llm.push(
			{ toolCalls: [{ name: 'request_execution', args: { target: `lxc:strong/${vmid}`, action: 'pct_start', params: {}, reason: `run-${i}` } }] },
			// Each text starts with a short marker (within the double's first 8-character delta), so
			// "first text visible" is when the marker appears.
			{ text: `«${i}w» waiting for your approval.`, chunkSize: 1000 },
			{
				text: `«${i}c» CT ${vmid} is running.`,
				toolCalls: [{ name: 'ask_operator', args: { prompt: `run-${i}: start it on boot too?`, options: ['yes', 'no'] } }]
			},
			{ text: `«${i}a» noted.`, chunkSize: 1000 }
		);
		marks.clear();
		await page.goto('/');
		// The page is server-rendered: text typed before it hydrates never reaches the composer's
		// state and Send stays disabled (seen under load). Wait until the app runs (its live stream is open).
		await page.locator('[data-testid="app-shell"][data-live="true"]').waitFor();
		await page.getByTestId('composer-input').fill(`start CT ${vmid} (run ${i})`);
		await page.getByTestId('send').click();
		const sent = await waitMark('click:send');
		const card = await waitMark(`approval:${vmid}`);
		rows.sendToApproval.push(card - sent);
		rows.sendToModel.push(modelRequestAfter(sent) - sent);

		const before = pve.execTimes().length;
		await page.locator(`[data-testid="execution-card"][data-status="awaiting_approval"]`).getByTestId('approve').click();
		const approved = await waitMark('click:approve');
		// The first command for this CT after the click (its precondition check): a sync or a
		// read-back of an earlier run may reach the host in between and is not the approval's doing.
		const forCt = () =>
			pve!
				.execTimes()
				.slice(before)
				.find((t) => t.at >= approved && t.command.includes(`'${vmid}'`));
		for (const until = Date.now() + 30_000; !forCt();) {
			if (Date.now() > until) throw new Error(`run ${i}: no command for CT ${vmid} reached the host after Approve`);
			await sleep(5);
		}
		rows.approveToCommand.push(forCt()!.at - approved);

		const contText = await waitMark(`text:«${i}c»`);
		const start = pve
			.execTimes()
			.slice(before)
			.find((t) => t.command.includes(`'pct' 'start' '${vmid}'`));
		if (!start?.endedAt) throw new Error(`run ${i}: pct start ${vmid} did not run on the host`);
		rows.endToText.push(contText - start.endedAt);
		const contModel = modelRequestAfter(start.endedAt);
		rows.endToModel.push(contModel - start.endedAt);
		rows.modelToText.push(contText - contModel);
		rows.endCommands.push(pve.execTimes().filter((t) => t.at >= start.endedAt! && t.at < contModel).length);
		const [ex] = await db<{ started: string }[]>`select steps -> 0 ->> 'startedAt' as started from executions where reason = ${`run-${i}`}`;
		rows.approveToStep.push(Date.parse(ex.started) - approved);

		await waitMark(`question:${i}`);
		await page.getByTestId('question-option').filter({ hasText: 'yes' }).click();
		const answered = await waitMark('click:question-option');
		const ansText = await waitMark(`text:«${i}a»`);
		rows.answerToText.push(ansText - answered);
		const ansModel = modelRequestAfter(answered);
		rows.answerToModel.push(ansModel - answered);
		rows.modelToText.push(ansText - ansModel);
		if ((i + 1) % 5 === 0) log(`  ${i + 1}/${RUNS} runs`);
	}

	if (process.env.BENCH_TRACE) {
		const events = [
			...pve.execTimes().flatMap((t) => [
				{ at: t.at, what: `exec ${t.command.slice(0, 60)}` },
				{ at: t.endedAt ?? NaN, what: `  end ${t.command.slice(0, 40)}` }
			]),
			...llm.requests.map((r) => ({ at: r.receivedAt, what: `model ${r.path}` })),
			...[...marks].map(([what, at]) => ({ at, what: `page ${what}` }))
		].sort((a, b) => a.at - b.at);
		await fs.writeFile(process.env.BENCH_TRACE, events.map((e) => `${Math.round(e.at)} ${e.what}`).join('\n'));
	}
	const hs = quantiles(handshakes);
	console.log('');
	console.log(`Operator waits, ${RUNS} runs each, through the app in Chromium (ms); ${os.cpus().length} CPUs, load average ${loadAverage()}`);
	console.log('');
	console.log('| moment | n | p50 | p99 | min | max |');
	console.log('|:--|--:|--:|--:|--:|--:|');
	const line = (name: string, xs: number[]) => {
		const s = quantiles(xs);
		console.log(`| ${name} | ${s.n} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.min)} | ${fmt(s.max)} |`);
	};
	line('send → approval card visible', rows.sendToApproval);
	line('  ↳ send → the model is asked', rows.sendToModel);
	line('Approve click → first command for the CT on the host', rows.approveToCommand);
	line('  ↳ Approve click → the step starts (after the precondition check)', rows.approveToStep);
	line('command ends on the host → agent’s first text visible', rows.endToText);
	line('  ↳ command ends → the model is asked', rows.endToModel);
	line('  ↳ SSH commands in between (record, refresh)', rows.endCommands);
	line('answer click → agent’s first text visible', rows.answerToText);
	line('  ↳ answer click → the model is asked', rows.answerToModel);
	line('model asked → its first text visible (continuation and answer)', rows.modelToText);
	line('floor: one fresh SSH handshake to the host', handshakes);
	console.log('');
	log(`handshake p50 ${fmt(hs.p50)} ms; the app's connections to the host: ${pve.handshakes() - RUNS} handshakes in ${RUNS} runs`);
}

let code = 1;
try {
	await main();
	code = 0;
} catch (e) {
	console.error(`[bench] failed: ${(e as Error).stack ?? String(e)}`);
} finally {
	await cleanup();
}
process.exit(code);
