// A prompt a local server can cache (issue #46): llama.cpp, Ollama and vLLM reuse the longest prefix a
// request shares with the one before it. Over one session run by the worker as in production (chat
// turns, a continuation after an approved execution, an approved plan, an answered question, and
// enough turns to fold the history), with the SSH Proxmox double and the scripted model recording
// every request body: each request starts with the previous one's messages, each of them equal as
// JSON (history replayed from the database included), except right after a fold; and every request
// offers the same tools.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { requestTurn } from '../../src/lib/server/conversation/turn-queue';
import { resetEnvCache } from '../../src/lib/server/env';
import { forgetContextWindow } from '../../src/lib/server/agent/context-budget';
import { SUMMARY_SYSTEM } from '../../src/lib/server/agent/summary';
import { operatorDecidesPlan } from '../../src/lib/server/executions/decisions';
import { answerFromPanel } from '../../src/lib/server/questions/answer';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import { agent__run_turn } from '../../tasks/agent__run_turn';
import { agent__continue_session } from '../../tasks/agent__continue_session';
import { executions__run } from '../../tasks/executions__run';
import { plans__advance } from '../../tasks/plans__advance';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { startScriptedLlm, type RecordedRequest, type ScriptedLlm, type ScriptedResponse } from '../doubles/llm/server';
import { hashHookSecret } from '../../src/lib/server/watches/secret';
import { deliverAlert } from '../helpers/alerts';
import { useTestDatabase } from '../helpers/db';
import { addHost, decide, freshSession, newOperator, newSession, useHub, waitUntil } from '../helpers/executions';

const dbUrl = useTestDatabase();
useHub();

let pve: ProxmoxDouble;
let llm: ScriptedLlm;
let worker: WorkerHandle | undefined;
let operatorId: string;
const TASKS = { agent__run_turn, agent__continue_session, executions__run, plans__advance };

beforeAll(async () => {
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] });
	await addHost(pve);
	llm = await startScriptedLlm();
	// A small history budget, so that the session folds after a few turns.
	Object.assign(process.env, {
		OPENAI_BASE_URL: llm.baseURL,
		OPENAI_API_KEY: 't',
		NOMOS_MODEL: 'scripted',
		NOMOS_SNAPSHOT_BEFORE: 'off',
		NOMOS_HISTORY_TOKENS: '2500'
	});
	resetEnvCache();
	forgetContextWindow();
	operatorId = await newOperator('alice');
	worker = await startWorker({ url: dbUrl(), concurrency: 2, taskList: TASKS });
});

afterAll(async () => {
	await worker?.stop();
	await llm?.close();
	await pve?.close();
	delete process.env.NOMOS_SNAPSHOT_BEFORE;
	delete process.env.NOMOS_HISTORY_TOKENS;
	resetEnvCache();
});

const isSummaryRequest = (r: RecordedRequest) => JSON.stringify(r.body?.messages?.[0]?.content ?? '').includes(SUMMARY_SYSTEM.slice(0, 40));
const chats = () => llm.requests.filter((r) => r.path.endsWith('/chat/completions'));
const call = (name: string, args: unknown): ScriptedResponse => ({ toolCalls: [{ name, args }] });

/** Work of the session still to come: a reply, a queued message, an execution or a job on its way. */
async function quiet(sessionId: string): Promise<boolean> {
	const [r] = await sql()<{ n: number }[]>`
		select (select count(*) from messages where session_id = ${sessionId} and status in ('streaming', 'queued'))
			+ (select count(*) from executions where requested_by_session = ${sessionId} and status in ('approved', 'queued', 'running'))
			+ (select count(*) from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
				where t.identifier = any(${Object.keys(TASKS)})) as n`;
	return Number(r.n) === 0;
}

async function settled(sessionId: string): Promise<void> {
	// Quiet twice in a row: a finished execution enqueues its continuation in the same transaction.
	let times = 0;
	await waitUntil(async () => ((await quiet(sessionId)) ? ++times >= 2 : ((times = 0), false)), 'the session to be quiet', {
		timeoutMs: 60_000,
		intervalMs: 50
	});
}

async function say(sessionId: string, text: string): Promise<void> {
	await sql().begin(async (tx) => {
		await insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text }], status: 'queued', origin: 'chat' });
		await requestTurn(tx, { sessionId, origin: 'chat' });
	});
	await settled(sessionId);
}

describe('a prompt a prefix cache can reuse', () => {
	it('each request starts with the one before it (but right after a fold), and offers the same tools', async () => {
		const script: ScriptedResponse[] = [];
		let summaries = 0;
		llm.setFallback((req) => {
			if (isSummaryRequest(req))
				return { text: `Summary ${++summaries}: the operator restarted nginx on caddy (CT 100), ran a plan and is creating a container named web.` };
			const next = script.shift();
			if (next) return next;
			// The fleet turns: one read, then a paragraph.
			if (req.body?.messages?.at(-1)?.role === 'tool')
				return { text: `caddy (100) runs on strong and nginx is active. ${'Nothing waits for your approval and no execution failed since. '.repeat(3)}` };
			return call('list_lxcs', {});
		});
		const sessionId = await newSession(operatorId, 'prefix');

		// 1. A read, an execution that waits for approval, words; approved, it runs and the agent is continued.
		script.push(
			call('list_lxcs', {}),
			call('request_execution', { target: 'lxc:strong/100', action: 'systemctl', params: { unit: 'nginx', op: 'restart' }, reason: 'the operator asked' }),
			{ text: 'The restart of nginx on caddy waits for your approval.' },
			{ text: 'nginx was restarted on caddy.' }
		);
		await say(sessionId, 'Restart nginx on caddy, please.');
		const [execution] = await sql()<{ id: string }[]>`select id from executions where requested_by_session = ${sessionId} and status = 'awaiting_approval'`;
		expect(execution).toBeDefined();
		expect((await decide(execution.id, operatorId, 'approved')).ok).toBe(true);
		await settled(sessionId);

		// 2. A plan: proposed (the turn ends), approved, run by itself, and told to the agent once.
		script.push(
			call('propose_plan', {
				title: 'Restart and check nginx on caddy',
				steps: [
					{ action: 'systemctl', target: 'lxc:strong/100', params: { unit: 'nginx', op: 'restart' }, why: 'restart it' },
					{ action: 'ct_service_active', target: 'lxc:strong/100', params: { unit: 'nginx' }, why: 'check it runs' }
				]
			}),
			{ text: 'The plan ran: nginx was restarted and is active.' }
		);
		await say(sessionId, 'Restart it again and check that it runs.');
		const [plan] = await sql()<{ id: string }[]>`select id from plans where session_id = ${sessionId} and status = 'proposed'`;
		expect(plan).toBeDefined();
		await sql().begin((tx) => operatorDecidesPlan(tx, plan.id, { decision: 'approved', operatorId, credential: freshSession() }));
		await settled(sessionId);

		// 3. A question (the turn ends), answered from the panel: the agent goes on.
		script.push(call('ask_operator', { prompt: 'Which hostname should the new container have?', options: ['web', 'app'] }), {
			text: 'I will call it web.'
		});
		await say(sessionId, 'Create a container for my new app.');
		const [question] = await sql()<{ id: string }[]>`select id from session_questions where session_id = ${sessionId}`;
		expect(question).toBeDefined();
		expect(await answerFromPanel(sessionId, question.id, 'web', { id: operatorId, role: 'admin' })).toMatchObject({ ok: true });
		await settled(sessionId);

		// 4. Fleet turns until the history folds, and one turn after the fold.
		for (let i = 1; i <= 10 && !summaries; i++) await say(sessionId, `Question ${i}: how is the fleet doing now? Tell me in detail.`);
		expect(summaries).toBeGreaterThan(0);
		await say(sessionId, 'And now?');
		expect(script).toHaveLength(0);

		const all = chats();
		for (const r of all) expect(r.error, `request ${r.seq}`).toBeUndefined();
		const origins = (await sql()<{ origin: string }[]>`select distinct origin from messages where session_id = ${sessionId} and role = 'assistant'`).map(
			(r) => r.origin
		);
		expect(origins.sort()).toEqual(['answer', 'chat', 'continuation', 'plan'].sort());

		let compared = 0;
		let prev: RecordedRequest | undefined;
		let folded = false;
		for (const r of all) {
			if (isSummaryRequest(r)) {
				folded = true;
				continue;
			}
			if (prev && !folded) {
				const before = prev.body!.messages!;
				const now = r.body!.messages!;
				expect(now.length, `request ${r.seq}`).toBeGreaterThan(before.length);
				for (const [i, m] of before.entries()) expect(JSON.stringify(now[i]), `request ${r.seq}, message ${i}`).toBe(JSON.stringify(m));
				compared++;
			}
			if (prev) expect(JSON.stringify(r.body!.tools), `request ${r.seq}: the tools`).toBe(JSON.stringify(prev.body!.tools));
			prev = r;
			folded = false;
		}
		// Every turn request but the first and the one after each fold was compared.
		expect(compared).toBe(all.filter((r) => !isSummaryRequest(r)).length - 1 - summaries);
		expect(compared).toBeGreaterThan(10);
	}, 180_000);

	it('an alert’s investigation too: its brief and the re-check’s stay where they were first sent', async () => {
		const script: ScriptedResponse[] = [];
		llm.setFallback(() => script.shift() ?? { text: 'Nothing more to add.' });
		const from = chats().length;
		const secret = `nomos_hook_${crypto.randomUUID()}`;
		const [hook] = await sql()<{ id: string }[]>`
			insert into alert_hooks (name, kind, secret_hash) values ('am', 'alertmanager', ${hashHookSecret(secret)}) returning id`;
		const alert = (status: 'firing' | 'resolved') =>
			deliverAlert(
				hook.id,
				{ authorization: `Bearer ${secret}` },
				{
					version: '4',
					groupKey: '{}:{alertname="NginxDown"}',
					status,
					receiver: 'nomos',
					groupLabels: { alertname: 'NginxDown' },
					commonLabels: { alertname: 'NginxDown', severity: 'critical', instance: 'strong', guest: 'caddy' },
					commonAnnotations: { summary: 'nginx on caddy does not answer', description: 'probe_http_status_code 502\nfor 5m' },
					externalURL: 'http://am',
					alerts: [{ status, labels: { alertname: 'NginxDown', instance: 'strong' }, annotations: {}, startsAt: '2026-12-06T10:00:00Z', fingerprint: 'ng' }]
				}
			);

		// 1. The investigation: a read, a restart that waits, findings; approved, it runs and the agent is continued.
		script.push(
			call('list_lxcs', {}),
			call('request_execution', { target: 'lxc:strong/100', action: 'systemctl', params: { unit: 'nginx', op: 'restart' }, reason: 'nginx answers 502' }),
			{ text: 'Findings: nginx on caddy fails; a restart waits for your approval.' },
			{ text: 'nginx was restarted on caddy.' }
		);
		const opened = (await alert('firing')).body.alerts![0];
		expect(opened.outcome).toBe('opened');
		const sessionId = opened.sessionId!;
		await settled(sessionId);
		const [execution] = await sql()<{ id: string }[]>`select id from executions where requested_by_session = ${sessionId} and status = 'awaiting_approval'`;
		expect(execution).toBeDefined();
		expect((await decide(execution.id, operatorId, 'approved')).ok).toBe(true);
		await settled(sessionId);

		// 2. A second restart waits; the alert resolves: the re-check's turn reads with read-only tools.
		script.push(
			call('request_execution', { target: 'lxc:strong/100', action: 'systemctl', params: { unit: 'nginx', op: 'reload' }, reason: 'reload its config' }),
			{ text: 'A reload waits for your approval.' },
			call('list_lxcs', {}),
			{ text: 'nginx is active: the reload is no longer needed.' }
		);
		await say(sessionId, 'Reload it too.');
		expect((await alert('resolved')).body.alerts![0].outcome).toBe('resolved');
		await settled(sessionId);
		expect(script).toHaveLength(0);

		const all = chats().slice(from);
		for (const r of all) expect(r.error, `request ${r.seq}`).toBeUndefined();
		expect(all.length).toBeGreaterThanOrEqual(6);
		const texts = all.map((r) => JSON.stringify(r.body!.messages));
		expect(texts[0]).toContain('<<<ALERT');
		expect(texts.at(-1)).toContain('has resolved');
		for (const [k, r] of all.entries()) {
			if (!k) continue;
			const before = all[k - 1].body!.messages!;
			const now = r.body!.messages!;
			expect(now.length, `request ${r.seq}`).toBeGreaterThan(before.length);
			for (const [i, m] of before.entries()) expect(JSON.stringify(now[i]), `request ${r.seq}, message ${i}`).toBe(JSON.stringify(m));
		}
	}, 120_000);
});
