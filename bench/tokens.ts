// `npm run bench:tokens` — what the agent's prompts cost (issue #30, "a lean agent for local models"):
// the held-in scenarios run end to end against the scripted model, and every request it received
// is counted with a real tokenizer (o200k, gpt-tokenizer).
//
//   1. starts its own embedded Postgres in a temp dir, the SSH Proxmox double (node `strong`) and the
//      scripted LLM double, in this process, and boots a worker as `npm run worker` does (turns,
//      executions, continuations all run as in production);
//   2. per scenario, scripts the model's answers, sends the operator's message as the chat router
//      does (or, for issue #45's incidents, posts the alert to a hook as its sender would: the
//      investigation starts with no operator message; the scripts are the incidents' integration
//      tests', tests/helpers/incidents.ts), and acts as the operator: approves every plan and
//      execution that waits, until the session is quiet;
//   3. prints per scenario: model requests, prompt and completion tokens, the share of the prompt
//      that is tool definitions, the operator's actions, and the first request split into
//      instructions / tools / history; per incident (a)–(e): what started it, its requests, its
//      first request and its totals. A first request over 2,000 tokens is a FAIL (exit 1).
//
//   4. `long`: a 60-turn chat (each turn one read and an answer), with older turns folded into the
//      stored summary (NOMOS_HISTORY_TOKENS, default 4000) and once more with folding off: the last
//      request split into instructions / tools / summary / history, the largest request and the
//      number of summary requests (goal: the last request ≤ 8,000 tokens).
//
// Exits non-zero when a scenario went off its script (an exhausted script, an execution that did not
// end as expected), so the figures are of the intended conversation.
//
//   5. with a prefix cache (issue #46; bench/prefix-cache.ts): per request, the tokens a local server
//      re-processes (all after the longest token prefix shared with the previous request of the
//      session) beside the request's total and the tokens new since the previous request, and the
//      seconds they cost at 50 and 1,000 prompt tokens/s. Goal: re-processed ≤ 1.15 × new, except
//      right after a fold (the previous request's messages are not all there).
//
//   npm run bench:tokens [-- --only create|recover|deploy|answer|backup|storage|start|updates|service|long] [--json]
//   npm run bench:tokens -- --from-dump <dir>   (only the prefix-cache figures, from a BENCH_DUMP of any commit)
// Env: BENCH_DUMP=<dir> writes each scenario's request bodies there (<scenario>.json).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { boot, type Runtime } from '../src/lib/server/boot';
import { sql } from '../src/lib/server/db/index';
import type { EmbeddedPostgres } from '../src/lib/server/db/embedded';
import { insertMessage } from '../src/lib/server/db/queries/messages';
import { credentialsByUsername } from '../src/lib/server/db/queries/operators';
import { createSession } from '../src/lib/server/db/queries/sessions';
import { requestTurn } from '../src/lib/server/conversation/turn-queue';
import { resetEnvCache } from '../src/lib/server/env';
import { operatorDecides, operatorDecidesPlan } from '../src/lib/server/executions/decisions';
import { promptParts, tokensOf, type PromptBody } from '../src/lib/server/agent/prompt-tokens';
import { SUMMARY_LABEL, SUMMARY_SYSTEM } from '../src/lib/server/agent/summary';
import { syncAllHosts } from '../src/lib/server/inventory/sync';
import { hashHookSecret } from '../src/lib/server/watches/secret';
import { taskList } from '../tasks/index';
import { deliverAlert } from '../tests/helpers/alerts';
import { INCIDENTS, type Incident, type IncidentStart } from '../tests/helpers/incidents';
import { writeSeed, type SeedCt } from '../tests/doubles/proxmox/state';
import { startScriptedLlm, type RecordedRequest, type ScriptedLlm, type ScriptedResponse } from '../tests/doubles/llm/server';
import { startProxmoxDouble, type ProxmoxDouble } from '../tests/doubles/proxmox/server';
import { benchPostgres, ROOT, sleep } from './harness';
import { PREFIX_GOAL, prefixCosts, prefixRatio, secondsAt, SPEEDS, type PrefixCost } from './prefix-cache';

process.chdir(ROOT);
const { values: opts } = parseArgs({ options: { only: { type: 'string' }, json: { type: 'boolean', default: false }, 'from-dump': { type: 'string' } } });
const OPERATOR = { username: 'bench', password: 'bench-password-1234' };
const DEBIAN = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';
const log = (s: string) => console.log(`[bench] ${s}`);

const call = (name: string, args: unknown): ScriptedResponse => ({ toolCalls: [{ name, args }] });
const exec = (target: string, action: string, params: Record<string, unknown>, reason: string) => call('request_execution', { target, action, params, reason });

type Scenario = {
	name: string;
	/** The operator's message, or an alert posted to a hook of its kind (the investigation starts with no operator message). */
	start: IncidentStart;
	/** The model's answers, given what `setup` answered. */
	script: ScriptedResponse[] | ((fromSetup: string | undefined) => ScriptedResponse[]);
	/** Before the session starts (faults, sites); what it answers is the script's (a task's UPID). */
	setup?(pve: ProxmoxDouble): Promise<string | undefined | void>;
	/** What must hold afterwards, else the scenario did not run as scripted. */
	expect: Array<{ action: string; status: string }>;
	/** An issue #45 incident: its line in the incidents' table. */
	incident?: string;
};

const SITE = 'server {\n\tlisten 8080 default_server;\n\troot /var/www/typetype;\n\tindex index.html;\n\tlocation / { try_files $uri $uri/ =404; }\n}\n';

const SCENARIOS: Scenario[] = [
	{
		name: 'create',
		start: { chat: 'Create a Debian 12 container called web on strong: 2 cores, 1 GiB of memory.' },
		script: [
			call('list_lxcs', {}),
			exec('strong', 'pct_create', { vmid: 120, hostname: 'web', template: DEBIAN, cores: 2, memory: 1024 }, 'the container the operator asked for'),
			{ text: 'I asked to create CT 120 (web) on strong; it waits for your approval.' },
			{ text: 'CT 120 (web) is created and running on strong.' }
		],
		expect: [{ action: 'pct_create', status: 'succeeded' }]
	},
	{
		name: 'recover',
		start: { chat: 'Destroy CT 110 (old), it is not needed any more.' },
		setup: (pve) => pve.patchCt(110, { lock: 'create' }),
		script: [
			exec('lxc:strong/110', 'pct_destroy', {}, 'the operator no longer needs it'),
			{ text: 'Destroying CT 110 waits for your approval.' },
			// Continuation: the destroy failed (the CT is locked).
			exec('lxc:strong/110', 'pct_unlock', {}, "the destroy failed: CT 110 is locked ('create' left by an interrupted create)"),
			{ text: 'The destroy failed because CT 110 is locked; I asked to unlock it first.' },
			exec('lxc:strong/110', 'pct_destroy', {}, 'destroy again now that the lock is gone'),
			{ text: 'Unlocked; the destroy waits for your approval again.' },
			{ text: 'CT 110 (old) is destroyed.' }
		],
		expect: [
			{ action: 'pct_destroy', status: 'failed' },
			{ action: 'pct_unlock', status: 'succeeded' },
			{ action: 'pct_destroy', status: 'succeeded' }
		]
	},
	{
		name: 'deploy',
		start: { chat: 'Deploy TypeType (a static web app, served by nginx on 8080) in a new container on strong and verify that it answers.' },
		setup: (pve) => pve.setHttp(130, 8080, { status: 200, body: 'ok' }),
		script: [
			call('get_state_snapshot', {}),
			call('search_knowledge', { query: 'typetype' }),
			call('propose_plan', {
				title: 'Deploy TypeType in CT 130',
				steps: [
					{
						action: 'pct_create',
						target: 'strong',
						params: { vmid: 130, hostname: 'typetype', template: DEBIAN, cores: 1, memory: 512 },
						why: 'a container for the app'
					},
					{ action: 'pct_exec', target: 'lxc:strong/130', params: { argv: ['apt-get', 'install', '-y', 'nginx'] }, why: 'the runtime' },
					{ action: 'pct_push', target: 'lxc:strong/130', params: { path: '/etc/nginx/sites-enabled/typetype', content: SITE }, why: 'the site' },
					{ action: 'systemctl', target: 'lxc:strong/130', params: { unit: 'nginx', op: 'restart' }, why: 'serve the site' },
					{ action: 'ct_service_active', target: 'lxc:strong/130', params: { unit: 'nginx' }, why: 'verify the service' },
					{ action: 'ct_http_check', target: 'lxc:strong/130', params: { port: 8080, path: '/' }, why: 'verify the app answers' }
				]
			}),
			// The approved plan runs by itself (read-only checks included); the agent is told once, at its end.
			{ text: 'TypeType is deployed in CT 130 and answers on port 8080.' }
		],
		expect: [
			{ action: 'pct_create', status: 'succeeded' },
			{ action: 'pct_exec', status: 'succeeded' },
			{ action: 'pct_push', status: 'succeeded' },
			{ action: 'systemctl', status: 'succeeded' },
			{ action: 'ct_service_active', status: 'succeeded' },
			{ action: 'ct_http_check', status: 'succeeded' }
		]
	},
	{
		name: 'answer',
		start: { chat: 'Which containers are running, and how much memory does each use?' },
		script: [call('list_lxcs', {}), { text: 'Running: caddy (100) and old... (see the table).' }],
		expect: []
	},
	...INCIDENTS.map(incidentScenario)
];

/** Issue #45's incidents as their integration tests script them (tests/helpers/incidents.ts), each on a node that has its guests. */
function incidentScenario(i: Incident): Scenario {
	return {
		name: i.name,
		incident: i.label,
		start: i.start,
		async setup(pve) {
			await addGuests(pve, i.guests);
			// Each incident fills a storage of its own, as on a node where the others did not happen.
			await pve.setHealth({ storages: null });
			return i.setup(pve);
		},
		script: (fromSetup) => [...i.script(fromSetup), i.reply],
		expect: planStepsOf(i.script(undefined))
	};
}

/** The CTs an incident is about that the bench's node does not have yet, added and synced into the inventory. */
async function addGuests(pve: ProxmoxDouble, guests: SeedCt[]): Promise<void> {
	const have = new Set((await pve.containers()).map((c) => c.vmid));
	const missing = guests.filter((g) => !have.has(g.vmid));
	if (!missing.length) return;
	await writeSeed(pve.stateDir, missing);
	await syncAllHosts();
}

/** The steps of the plan a script proposes, each expected to succeed (a read may fail as the fault makes it: a unit down exits 3). */
function planStepsOf(script: ScriptedResponse[]): Scenario['expect'] {
	return script.flatMap((r) =>
		('toolCalls' in r ? r.toolCalls : []).flatMap((c) =>
			c.name === 'propose_plan' ? ((c.args as { steps?: { action: string }[] }).steps ?? []).map((st) => ({ action: st.action, status: 'succeeded' })) : []
		)
	);
}

/** Posts the alert to a new hook of its kind as its sender would; the investigation's session. */
async function alertSession(name: string, start: Extract<IncidentStart, { hook: string }>): Promise<string> {
	const secret = `nomos_hook_${crypto.randomUUID()}`;
	const [hook] = await sql()<{ id: string }[]>`
		insert into alert_hooks (name, kind, secret_hash) values (${`bench-${name}`}, ${start.hook}, ${hashHookSecret(secret)}) returning id`;
	const r = await deliverAlert(hook.id, { authorization: `Bearer ${secret}` }, start.alert);
	const sessionId = r.body.alerts?.[0]?.sessionId;
	if (r.status !== 202 || !sessionId) throw new Error(`${name}: the alert did not open an investigation (${r.status}: ${JSON.stringify(r.body)})`);
	return sessionId;
}

/** Issue #45 (and #30): every session's first request, an alert's investigation included, fits in this many tokens. */
const FIRST_GOAL = 2000;

type Row = {
	scenario: string;
	/** An issue #45 incident's words, and what started it. */
	incident?: { label: string; start: string };
	requests: number;
	prompt: number;
	completion: number;
	toolShare: number;
	operatorActions: number;
	first: { instructions: number; tools: number; history: number; total: number };
	largest: number;
	prefix: PrefixCost[];
};

let tmp: string | undefined;
let pg: EmbeddedPostgres | undefined;
let runtime: Runtime | undefined;
let llm: ScriptedLlm | undefined;
let pve: ProxmoxDouble | undefined;

async function cleanup() {
	await runtime?.shutdown().catch((e: Error) => log(`stopping the worker: ${e.message}`));
	await llm?.close().catch(() => undefined);
	await pve?.close().catch(() => undefined);
	await pg?.stop().catch(() => undefined);
	if (tmp) await fs.rm(tmp, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void cleanup().finally(() => process.exit(130)));

/** Work of this session still to come: a turn, a continuation, an execution on its way. */
async function busy(sessionId: string): Promise<boolean> {
	const [r] = await sql()<{ n: number }[]>`
		select (select count(*) from messages where session_id = ${sessionId} and status in ('streaming', 'queued'))
			+ (select count(*) from executions where requested_by_session = ${sessionId} and status in ('approved', 'queued', 'running'))
			+ (select count(*) from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
				where t.identifier <> 'inventory__sync' and t.identifier <> 'events__prune' and t.identifier <> 'executions__sweep') as n`;
	return Number(r.n) > 0;
}

async function runScenario(s: Scenario, operatorId: string): Promise<{ row: Row; errors: string[] }> {
	llm!.reset();
	const fromSetup = (await s.setup?.(pve!)) ?? undefined;
	llm!.push(...(typeof s.script === 'function' ? s.script(fromSetup) : s.script));
	const start = s.start;
	const sessionId =
		'chat' in start
			? await sql().begin(async (tx) => {
					const id = await createSession(tx, operatorId, s.name);
					await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text: start.chat }], status: 'queued', origin: 'chat' });
					await requestTurn(tx, { sessionId: id, origin: 'chat' });
					return id;
				})
			: await alertSession(s.name, start);
	const credential = { kind: 'session', verifiedAt: new Date().toISOString() } as const;
	// The operator's message, if it started the session, and each approval.
	let actions = 'chat' in start ? 1 : 0;
	let quiet = 0;
	const deadline = Date.now() + 180_000;
	const errors: string[] = [];
	while (quiet < 3) {
		if (Date.now() > deadline) {
			errors.push(`${s.name}: not quiet after 180 s`);
			break;
		}
		await sleep(150);
		const plans = await sql()<{ id: string }[]>`select id from plans where session_id = ${sessionId} and status = 'proposed'`;
		const waiting = await sql()<{ id: string }[]>`select id from executions where requested_by_session = ${sessionId} and status = 'awaiting_approval'`;
		for (const p of plans) {
			await sql().begin((tx) => operatorDecidesPlan(tx, p.id, { decision: 'approved', operatorId, credential }));
			actions++;
		}
		for (const e of waiting) {
			const r = await sql().begin((tx) => operatorDecides(tx, e.id, { decision: 'approved', route: 'button', operatorId, credential }));
			if (!r.ok) errors.push(`${s.name}: approval refused (${r.reason})`);
			actions++;
		}
		quiet = plans.length || waiting.length || (await busy(sessionId)) ? 0 : quiet + 1;
	}
	const chats = llm!.requests.filter((r) => r.path.endsWith('/chat/completions'));
	if (process.env.BENCH_DUMP)
		await fs.writeFile(
			path.join(process.env.BENCH_DUMP, `${s.name}.json`),
			JSON.stringify(
				chats.map((r) => r.body),
				null,
				1
			)
		);
	for (const r of chats) if (r.error) errors.push(`${s.name}: request ${r.seq}: ${r.error}`);
	if (llm!.state().pending) errors.push(`${s.name}: ${llm!.state().pending} scripted answers left unused`);
	const execs = await sql()<{ action: string; status: string; error: string | null }[]>`
		select action, status, error from executions where requested_by_session = ${sessionId} order by created_at`;
	for (const want of s.expect) {
		const i = execs.findIndex((e) => e.action === want.action && e.status === want.status);
		if (i === -1)
			errors.push(
				`${s.name}: no ${want.action} ${want.status} (got ${execs.map((e) => `${e.action} ${e.status}${e.error ? ` (${e.error.slice(0, 200)})` : ''}`).join(', ') || 'none'})`
			);
		else execs.splice(i, 1);
	}

	let prompt = 0;
	let tools = 0;
	let completion = 0;
	let largest = 0;
	for (const r of chats) {
		const parts = promptParts(r.body ?? {});
		prompt += parts.total;
		tools += parts.tools;
		largest = Math.max(largest, parts.total);
		const answer =
			r.response && 'toolCalls' in r.response
				? JSON.stringify(r.response.toolCalls) + (r.response.text ?? '')
				: r.response && 'text' in r.response
					? r.response.text
					: '';
		completion += tokensOf(answer);
	}
	const first = promptParts(chats[0]?.body ?? {});
	if (first.total > FIRST_GOAL) errors.push(`${s.name}: FAIL: the first request is ${n(first.total)} tokens, over the ${n(FIRST_GOAL)} goal`);
	return {
		row: {
			scenario: s.name,
			...(s.incident ? { incident: { label: s.incident, start: startedBy(s.start) } } : {}),
			requests: chats.length,
			prompt,
			completion,
			toolShare: prompt ? tools / prompt : 0,
			operatorActions: actions,
			first,
			largest,
			prefix: prefixCosts(chats.map((r) => r.body ?? {}))
		},
		errors
	};
}

const LONG_TURNS = 60;
const LONG_GOAL = 8000;

type LongRow = {
	scenario: string;
	turns: number;
	requests: number;
	summaryRequests: number;
	prompt: number;
	largest: number;
	last: { instructions: number; tools: number; summary: number; history: number; total: number };
	prefix: PrefixCost[];
};

const isSummaryRequest = (r: RecordedRequest) => JSON.stringify(r.body?.messages?.[0]?.content ?? '').includes(SUMMARY_SYSTEM.slice(0, 40));

/** A request's tokens with the summary note counted apart from the rest of the history. */
function partsWithSummary(body: PromptBody): LongRow['last'] {
	const all = promptParts(body);
	const note = (body.messages ?? []).filter((m) => typeof m.content === 'string' && m.content.includes(SUMMARY_LABEL));
	const summary = note.length ? promptParts({ messages: note }).history : 0;
	return { instructions: all.instructions, tools: all.tools, summary, history: all.history - summary, total: all.total };
}

/**
 * A 60-turn chat: the operator asks about one container after another, the agent reads (a rotating
 * fleet tool) and answers in a paragraph. `fold`: the history budget (NOMOS_HISTORY_TOKENS; 0 is off).
 */
async function runLongSession(name: string, fold: number, operatorId: string): Promise<{ row: LongRow; errors: string[] }> {
	llm!.reset();
	process.env.NOMOS_HISTORY_TOKENS = String(fold);
	resetEnvCache();
	const reads: ScriptedResponse[] = [
		call('list_lxcs', {}),
		call('get_lxc_state', { name: 'caddy' }),
		call('search_knowledge', { query: 'typetype nginx' }),
		call('get_state_snapshot', {}),
		call('get_entity', { id: 'lxc:strong/101' })
	];
	let summaries = 0;
	llm!.setFallback((req) => {
		if (isSummaryRequest(req)) {
			summaries++;
			return {
				text:
					`The operator is going through the fleet on strong one container at a time (${summaries * 10} questions so far). ` +
					'caddy (100) and db (101) run; media (102) and old (110) are stopped. TypeType is a static app served by nginx on 8080. ' +
					'No executions were requested and nothing is waiting for approval. Open: the operator may ask to start media next.'
			};
		}
		if (req.body?.messages?.at(-1)?.role === 'tool') {
			return {
				text:
					'Here is what I found. caddy (100) and db (101) are running on strong with plenty of free memory; media (102) and old (110) are stopped. ' +
					'Nothing is waiting for your approval, and no execution ran since your last question. Tell me if you want me to start or change anything.'
			};
		}
		return reads[(req.body?.messages?.filter((m) => m.role === 'user').length ?? 0) % reads.length];
	});
	const sessionId = await sql().begin((tx) => createSession(tx, operatorId, name));
	const errors: string[] = [];
	for (let i = 1; i <= LONG_TURNS; i++) {
		await sql().begin(async (tx) => {
			const text = `Question ${i}: how is the fleet doing now, and is anything on strong that I should look at before tonight's backup?`;
			await insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text }], status: 'queued', origin: 'chat' });
			await requestTurn(tx, { sessionId, origin: 'chat' });
		});
		const deadline = Date.now() + 60_000;
		let quiet = 0;
		while (quiet < 2) {
			if (Date.now() > deadline) {
				errors.push(`${name}: turn ${i} not done after 60 s`);
				break;
			}
			await sleep(50);
			quiet = (await busy(sessionId)) ? 0 : quiet + 1;
		}
	}
	const chats = llm!.requests.filter((r) => r.path.endsWith('/chat/completions'));
	if (process.env.BENCH_DUMP)
		await fs.writeFile(
			path.join(process.env.BENCH_DUMP, `${name}.json`),
			JSON.stringify(
				chats.map((r) => r.body),
				null,
				1
			)
		);
	for (const r of chats) if (r.error) errors.push(`${name}: request ${r.seq}: ${r.error}`);
	const turns = chats.filter((r) => !isSummaryRequest(r));
	if (turns.length !== LONG_TURNS * 2) errors.push(`${name}: ${turns.length} turn requests, expected ${LONG_TURNS * 2}`);
	const sizes = chats.map((r) => promptParts(r.body ?? {}).total);
	const last = partsWithSummary(turns.at(-1)?.body ?? {});
	if (fold && last.total > LONG_GOAL) errors.push(`${name}: the last request is ${last.total} tokens, over the ${LONG_GOAL} goal`);
	return {
		row: {
			scenario: name,
			turns: LONG_TURNS,
			requests: chats.length,
			summaryRequests: chats.length - turns.length,
			prompt: sizes.reduce((a, b) => a + b, 0),
			largest: Math.max(0, ...sizes),
			last,
			prefix: prefixCosts(chats.map((r) => r.body ?? {}))
		},
		errors
	};
}

async function main(): Promise<number> {
	if (!process.env.BENCH_VERBOSE) console.info = () => undefined;
	tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-bench-tokens-'));
	pg = await benchPostgres(tmp);
	pve = await startProxmoxDouble({
		nodeName: 'strong',
		delayMs: 1,
		seed: [
			{ vmid: 100, hostname: 'caddy', status: 'running' },
			{ vmid: 101, hostname: 'db', status: 'running' },
			{ vmid: 102, hostname: 'media', status: 'stopped' },
			{ vmid: 110, hostname: 'old', status: 'stopped' }
		]
	});
	llm = await startScriptedLlm();
	Object.assign(process.env, {
		DATABASE_URL: pg.url,
		NOMOS_WORKER: 'on',
		NOMOS_INVENTORY_SYNC: 'on',
		NOMOS_HOSTS: JSON.stringify([
			{ name: 'strong', address: '127.0.0.1', port: pve.port, user: 'root', keyPath: pve.clientKeyPath, hostKeyFingerprint: pve.hostKeyFingerprint }
		]),
		NOMOS_OPERATOR_USERNAME: OPERATOR.username,
		NOMOS_OPERATOR_PASSWORD: OPERATOR.password,
		NOMOS_KNOWLEDGE_DIR: '',
		OPENAI_BASE_URL: llm.baseURL,
		OPENAI_API_KEY: 'bench',
		NOMOS_MODEL: 'scripted'
	});
	resetEnvCache();
	runtime = await boot('worker', { taskList });
	const ready = Date.now() + 120_000;
	for (;;) {
		const [r] = await sql()<{ n: number }[]>`select count(*)::int as n from entities where kind = 'lxc'`;
		if (r.n >= 4) break;
		if (Date.now() > ready) throw new Error('the first inventory sync did not finish within 120 s');
		await sleep(100);
	}
	await sql()`insert into knowledge (title, body, source) values ('TypeType', 'TypeType is a static web app: nginx serves /var/www/typetype on port 8080.', 'page')`;
	const operator = await credentialsByUsername(sql(), OPERATOR.username);
	if (!operator) throw new Error('the configured operator was not created');

	const rows: Row[] = [];
	const errors: string[] = [];
	for (const s of SCENARIOS.filter((x) => !opts.only || x.name === opts.only)) {
		const r = await runScenario(s, operator.id);
		rows.push(r.row);
		errors.push(...r.errors);
	}
	const long: LongRow[] = [];
	if (!opts.only || opts.only === 'long') {
		const folded = Number(process.env.NOMOS_HISTORY_TOKENS || 4000);
		for (const [name, fold] of [
			['long', folded],
			['unfolded', 0]
		] as const) {
			const r = await runLongSession(name, fold, operator.id);
			long.push(r.row);
			errors.push(...r.errors);
		}
	}
	print(rows, long);
	for (const e of errors) log(`ERROR ${e}`);
	return errors.length ? 1 : 0;
}

const n = (x: number) => x.toLocaleString('en-GB');
const secs = (tokens: number) => SPEEDS.map((v) => `${secondsAt(tokens, v).toFixed(1)} s`.padStart(8)).join(' ');

/** One session's prefix-cache figures: its sums, and the requests over the goal (folds apart). */
function prefixSummary(name: string, costs: PrefixCost[]): string {
	const sum = (f: (c: PrefixCost) => number) => costs.reduce((a, c) => a + f(c), 0);
	const total = sum((c) => c.total);
	const process = sum((c) => c.process);
	const over = costs.flatMap((c, i) => (i > 0 && !c.afterFold && prefixRatio(c) > PREFIX_GOAL ? [i + 1] : []));
	const folds = costs.filter((c) => c.afterFold).length;
	const worst = Math.max(0, ...costs.flatMap((c, i) => (i > 0 && !c.afterFold ? [prefixRatio(c)] : [])));
	return (
		`${name.padEnd(10)} ${n(total).padStart(8)}   ${n(process).padStart(10)} (${String(Math.round((100 * process) / Math.max(1, total))).padStart(3)} %)   ${secs(process)}` +
		`   worst ${worst.toFixed(2)}×, over ${PREFIX_GOAL}×: ${over.length ? `${over.length} (#${over.slice(0, 6).join(', #')}${over.length > 6 ? ', …' : ''})` : 'none'}${folds ? ` (${folds} after a fold, apart)` : ''}`
	);
}

function printPrefix(rows: Pick<Row, 'scenario' | 'prefix'>[], long: Pick<LongRow, 'scenario' | 'prefix'>[]) {
	console.log(`
with a prefix cache (o200k): tokens to process = all after the prefix shared with the session's previous request`);
	console.log(`scenario      total   to process         at ${SPEEDS.join(' / ')} tok/s   (goal: to process ≤ ${PREFIX_GOAL} × new, per request)`);
	for (const r of [...rows, ...long]) console.log(prefixSummary(r.scenario, r.prefix));
	for (const r of rows) {
		console.log(`
${r.scenario}: request   total   new   to process   ratio   at ${SPEEDS.join(' / ')} tok/s`);
		r.prefix.forEach((c, i) =>
			console.log(
				`${String(i + 1).padStart(17)} ${n(c.total).padStart(7)} ${n(c.fresh).padStart(5)}   ${n(c.process).padStart(10)}   ${(i ? `${prefixRatio(c).toFixed(2)}×` : '—').padStart(5)}   ${secs(c.process)}${c.afterFold ? '   (after a fold)' : ''}`
			)
		);
	}
}

function print(rows: Row[], long: LongRow[]) {
	if (opts.json) return console.log(JSON.stringify({ scenarios: rows, long }, null, 2));
	printPrefix(rows, long);
	if (long.length) {
		console.log(
			`\n${LONG_TURNS}-turn session   requests   summary requests   prompt tokens   largest request   last request: instructions + tools + summary + history = total`
		);
		for (const r of long) {
			const l = r.last;
			console.log(
				`${r.scenario.padEnd(17)} ${String(r.requests).padStart(8)}   ${String(r.summaryRequests).padStart(16)}   ${n(r.prompt).padStart(13)}   ${n(r.largest).padStart(15)}   ${n(l.instructions)} + ${n(l.tools)} + ${n(l.summary)} + ${n(l.history)} = ${n(l.total)}`
			);
		}
		if (!rows.length) return;
	}
	console.log('\nscenario   requests   prompt tokens   completion   tool defs   largest request   operator actions');
	for (const r of rows) {
		console.log(
			`${r.scenario.padEnd(10)} ${String(r.requests).padStart(8)}   ${n(r.prompt).padStart(13)}   ${n(r.completion).padStart(10)}   ${`${Math.round(r.toolShare * 100)} %`.padStart(9)}   ${n(r.largest).padStart(15)}   ${String(r.operatorActions).padStart(16)}`
		);
	}
	const incidents = rows.filter((r) => r.incident);
	if (incidents.length) {
		console.log('\nissue #45 incident             started by         requests   first request   prompt tokens   completion   operator actions');
		for (const r of incidents)
			console.log(
				`${r.incident!.label.padEnd(30)} ${r.incident!.start.padEnd(18)} ${String(r.requests).padStart(8)}   ${n(r.first.total).padStart(13)}   ${n(r.prompt).padStart(13)}   ${n(r.completion).padStart(10)}   ${String(r.operatorActions).padStart(16)}`
			);
	}
	console.log(`\nfirst request (o200k tokens): instructions + tools + history = total (goal: ≤ ${n(FIRST_GOAL)})`);
	for (const r of rows)
		console.log(
			`${r.scenario.padEnd(10)} ${n(r.first.instructions)} + ${n(r.first.tools)} + ${n(r.first.history)} = ${n(r.first.total)}${r.first.total > FIRST_GOAL ? '   FAIL: over the goal' : ''}`
		);
	const over = rows.filter((r) => r.first.total > FIRST_GOAL);
	console.log(
		over.length
			? `FAIL: ${over.length} of ${rows.length} first requests over ${n(FIRST_GOAL)} tokens (${over.map((r) => r.scenario).join(', ')})`
			: `ok: every first request ≤ ${n(FIRST_GOAL)} tokens (${n(Math.min(...rows.map((r) => r.first.total)))}–${n(Math.max(...rows.map((r) => r.first.total)))})`
	);
}

const startedBy = (start: IncidentStart) => ('chat' in start ? 'a chat message' : start.hook === 'proxmox' ? 'Proxmox VE webhook' : 'Alertmanager');

/** The prefix-cache figures of request bodies dumped earlier (BENCH_DUMP), e.g. by an older commit. */
async function fromDump(dir: string): Promise<number> {
	const names = (await fs.readdir(dir)).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5));
	const order = [...SCENARIOS.map((x) => x.name), 'long', 'unfolded'];
	names.sort((a, b) => order.indexOf(a) - order.indexOf(b));
	const sessions = await Promise.all(
		names.map(async (name) => ({ scenario: name, prefix: prefixCosts(JSON.parse(await fs.readFile(path.join(dir, `${name}.json`), 'utf8')) as PromptBody[]) }))
	);
	const short = sessions.filter((x) => SCENARIOS.some((sc) => sc.name === x.scenario));
	printPrefix(
		short,
		sessions.filter((x) => !short.includes(x))
	);
	return 0;
}

let code = 1;
try {
	code = opts['from-dump'] ? await fromDump(opts['from-dump']) : await main();
} catch (e) {
	log(`failed: ${(e as Error).stack ?? String(e)}`);
} finally {
	await cleanup();
}
process.exit(code);
