// An approved plan runs itself (#35): with a real worker (graphile-worker in this process), the SSH
// Proxmox double and the scripted model, one approval runs every step in order as executions of
// the plan, and the agent is asked once at the end — never between steps. A failing step stops
// the plan there; Stop on the card cancels the running step; the rest are never run.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { getPlan } from '../../src/lib/server/db/queries/plans';
import { getExecution, listSessionExecutions } from '../../src/lib/server/db/queries/executions';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { operatorDecidesPlan } from '../../src/lib/server/executions/decisions';
import { advancePlan, stopPlan } from '../../src/lib/server/executions/plans';
import { requestExecution } from '../../src/lib/server/executions/request';
import { plans__advance } from '../../tasks/plans__advance';
import { executions__run } from '../../tasks/executions__run';
import { agent__continue_session } from '../../tasks/agent__continue_session';
import { alive, freshSession, newOperator, newSession, waitUntil } from '../helpers/executions';
import { useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { llm, pve } = useStage({
	model: true,
	env: { NOMOS_SNAPSHOT_BEFORE: 'off' },
	sync: false,
	hosts: [{ nodeName: 'strong', seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] }],
	worker: { concurrency: 3, taskList: { plans__advance, executions__run, agent__continue_session } }
});
let operatorId: string;

const TEMPLATE = 'ubuntu-22.04-standard_22.04-1_amd64.tar.zst';
const UNIT = '[Unit]\nDescription=App\n\n[Service]\nExecStart=/usr/bin/node /opt/app/server.js\n\n[Install]\nWantedBy=multi-user.target\n';

/** The deploy scenario's plan: download, create, install, push the unit, enable it, a read-only HTTP check. */
function deployPlan(vmid: number) {
	return {
		title: `Deploy the app on CT ${vmid}`,
		steps: [
			{ action: 'pveam_download', target: 'strong', params: { storage: 'local', template: TEMPLATE }, why: 'the template is missing' },
			{
				action: 'pct_create',
				target: 'strong',
				params: { vmid: String(vmid), hostname: `app${vmid}`, template: `local:vztmpl/${TEMPLATE}`, start: true },
				why: 'the CT'
			},
			{ action: 'pct_exec', target: `strong/${vmid}`, params: { argv: ['apt-get', 'install', '-y', 'nginx'] }, why: 'its runtime' },
			{ action: 'pct_push', target: `strong/${vmid}`, params: { path: '/etc/systemd/system/app.service', content: UNIT }, why: 'its unit' },
			{ action: 'systemctl', target: `strong/${vmid}`, params: { unit: 'app.service', op: 'enable' }, why: 'start it at boot' },
			{ action: 'ct_http_check', target: `strong/${vmid}`, params: { port: 8080, path: '/healthz' }, why: 'make sure it answers' }
		]
	};
}

beforeAll(async () => {
	operatorId = await newOperator('alice');
});

/** One operator message; the scripted model looks, then proposes the plan (its turn ends there). */
async function proposed(vmid: number): Promise<{ sessionId: string; planId: string }> {
	const sessionId = await newSession(operatorId, `deploy ${vmid}`);
	await sql().begin((tx) =>
		insertMessage(tx, {
			sessionId,
			role: 'user',
			parts: [{ type: 'text', text: 'deploy this Node.js app in a new container on strong and make sure it works' }],
			status: 'complete',
			origin: 'chat'
		})
	);
	llm.push({ toolCalls: [{ name: 'list_lxcs', args: {} }] }, { toolCalls: [{ name: 'propose_plan', args: deployPlan(vmid) }] });
	expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');
	expect(llm.requests).toHaveLength(2);
	const [plan] = await sql()<{ id: string; status: string }[]>`select id, status from plans where session_id = ${sessionId}`;
	expect(plan.status).toBe('proposed');
	return { sessionId, planId: plan.id };
}

const approve = (planId: string) => sql().begin((tx) => operatorDecidesPlan(tx, planId, { decision: 'approved', operatorId, credential: freshSession() }));

const planStatus = async (planId: string) => (await getPlan(sql(), planId))!.status;

/** The reply that tells the operator how the plan went, once it is complete. */
async function continuationReplies(sessionId: string) {
	return (await listMessages(sql(), sessionId)).filter((m) => m.role === 'assistant' && m.origin === 'plan');
}

/** What the double ran for one CT (argv lists that name it), as space-joined strings. */
async function ranOn(vmid: number): Promise<string[]> {
	return (await pve.argvLog()).map((a) => a.join(' ')).filter((l) => l.includes(` ${vmid} `) || l.endsWith(` ${vmid}`) || l.includes(`--vmid ${vmid}`));
}

describe('an approved plan runs itself', () => {
	it(
		'six steps from one approval, read-only check included; the model is asked twice after it (the summary turn), none between steps',
		async () => {
			const { sessionId, planId } = await proposed(170);
			await pve.setHttp(170, 8080, { paths: { '/healthz': { body: 'ok' } } });
			const before = llm.requests.length;
			// The summary turn: one look (a tool call), then the words.
			llm.push({ toolCalls: [{ name: 'list_lxcs', args: {} }] }, { text: 'Deployed: CT 170 runs the app and /healthz answers ok.' });
			expect((await approve(planId))?.status).toBe('approved');

			await waitUntil(async () => (await planStatus(planId)) === 'succeeded', 'the plan to finish', { timeoutMs: 60_000, intervalMs: 100 });
			await waitUntil(async () => (await continuationReplies(sessionId)).find((m) => m.status === 'complete'), 'the summary reply', {
				timeoutMs: 30_000,
				intervalMs: 100
			});

			const plan = (await getPlan(sql(), planId))!;
			const runs = await Promise.all(plan.steps.map((s) => getExecution(sql(), s.executionId!)));
			expect(runs.map((e) => [e!.action, e!.status])).toEqual([
				['pveam_download', 'succeeded'],
				['pct_create', 'succeeded'],
				['pct_exec', 'succeeded'],
				['pct_push', 'succeeded'],
				['systemctl', 'succeeded'],
				['ct_http_check', 'succeeded']
			]);
			// In order, each after the one before it had finished; each an execution of the plan with its hash.
			for (let i = 1; i < runs.length; i++) expect(runs[i]!.startedAt! >= runs[i - 1]!.finishedAt!).toBe(true);
			for (const [i, e] of runs.entries()) expect(e).toMatchObject({ planId, hash: plan.steps[i].hash });
			// Mutations carry an approval by the plan (as alice); the read-only check needs none.
			expect(runs.slice(0, 5).every((e) => e!.decision?.route === 'plan' && e!.decision.decidedBy === 'alice')).toBe(true);
			expect(runs[5]!.decision).toBeNull();

			// Exactly two model requests after the approval, both of the one summary turn, and the
			// first of them already carried every step's outcome (nothing was asked between steps).
			expect(llm.requests.length - before).toBe(2);
			const chars = llm.requests.reduce((n, r) => n + JSON.stringify(r.body).length, 0);
			console.log(
				`[plans-run] model requests: ${llm.requests.length} in all, ${llm.requests.length - before} after the approval; request bodies ${chars} chars`
			);
			const first = JSON.stringify(llm.requests[before].body);
			expect(first).toContain('ran to the end: every step succeeded');
			for (let i = 1; i <= 6; i++) expect(first).toContain(`Step ${i} (`);
			expect(await continuationReplies(sessionId)).toHaveLength(1);
			// The operator wrote once; one note tells the plan's end.
			const msgs = await listMessages(sql(), sessionId);
			expect(msgs.filter((m) => m.role === 'user')).toHaveLength(1);
			expect(msgs.filter((m) => m.role === 'system' && JSON.stringify(m.parts).includes('ran to the end'))).toHaveLength(1);
			// A step ran once: one pct create, one install.
			const log = await ranOn(170);
			expect(log.filter((l) => l.startsWith('pct create'))).toHaveLength(1);
			expect(log.filter((l) => l.includes('apt-get install'))).toHaveLength(1);
			// Moving it on again does nothing.
			expect(await advancePlan(planId)).toBe('nothing');
		},
		scaled(120_000)
	);

	it(
		'a failing step 3 stops the plan: steps 4–6 never run, and the agent gets one note saying what ran, what failed and what was left',
		async () => {
			const { sessionId, planId } = await proposed(171);
			await pve.setFault('fail', { tool: 'apt-get', match: 'install', exitCode: 100, stderr: 'E: Unable to locate package nginx' });
			try {
				const before = llm.requests.length;
				llm.push({ text: "The install failed: nginx is not in the CT's package lists. I will propose running apt-get update first." });
				await approve(planId);
				await waitUntil(async () => (await planStatus(planId)) === 'failed', 'the plan to fail', { timeoutMs: 60_000, intervalMs: 100 });
				await waitUntil(async () => (await continuationReplies(sessionId)).find((m) => m.status === 'complete'), 'the reply', {
					timeoutMs: 30_000,
					intervalMs: 100
				});

				const plan = (await getPlan(sql(), planId))!;
				expect(plan.steps.map((s) => Boolean(s.executionId))).toEqual([true, true, true, false, false, false]);
				expect((await getExecution(sql(), plan.steps[2].executionId!))!.status).toBe('failed');
				const log = await ranOn(171);
				expect(log.some((l) => l.includes('/etc/systemd/system/app.service'))).toBe(false);
				expect(log.some((l) => l.includes('systemctl enable'))).toBe(false);
				expect(log.some((l) => l.includes('curl'))).toBe(false);

				expect(llm.requests.length - before).toBe(1);
				const sent = JSON.stringify(llm.requests[before].body);
				expect(sent).toContain('stopped at step 3 of 6 (failed)');
				expect(sent).toContain('Unable to locate package nginx');
				expect(sent).toContain('Steps 4, 5, 6 were not run');
				const notes = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'system' && JSON.stringify(m.parts).includes('stopped at step'));
				expect(notes).toHaveLength(1);
			} finally {
				await pve.setFault('fail', null);
			}
		},
		scaled(120_000)
	);

	it(
		'Stop on the card cancels the running step; the rest are not run; the agent is told once',
		async () => {
			const { sessionId, planId } = await proposed(172);
			await pve.setFault('hang', 'apt-get');
			try {
				llm.push({ text: 'Stopped as you asked during the install; CT 172 exists without the app.' });
				await approve(planId);
				const plan = await waitUntil(
					async () => {
						const p = (await getPlan(sql(), planId))!;
						const third = p.steps[2].executionId ? await getExecution(sql(), p.steps[2].executionId) : null;
						return third?.status === 'running' && third.steps.length ? p : null;
					},
					'step 3 to run',
					{ timeoutMs: 60_000, intervalMs: 100 }
				);
				// The install hangs on the host; the operator presses Stop.
				await waitUntil(async () => (await pve.hangs()).some((h) => alive(h.pid)), 'apt-get to hang', { timeoutMs: 15_000 });
				expect(await sql().begin((tx) => stopPlan(tx, planId, operatorId))).not.toBeNull();
				await waitUntil(async () => (await planStatus(planId)) === 'cancelled', 'the plan to stop', { timeoutMs: 30_000, intervalMs: 100 });
				await waitUntil(async () => (await continuationReplies(sessionId)).find((m) => m.status === 'complete'), 'the reply', {
					timeoutMs: 30_000,
					intervalMs: 100
				});

				const third = (await getExecution(sql(), plan.steps[2].executionId!))!;
				expect(third.status).toBe('interrupted');
				expect(third.error).toMatch(/cancelled by the operator/);
				// Stopped on the host, as any cancelled execution is.
				expect(['gone', 'stopped']).toContain(third.steps.at(-1)!.stop);
				await waitUntil(async () => (await pve.hangs()).every((h) => !alive(h.pid)), 'the hung install to be gone from the host', { timeoutMs: 10_000 });
				const after = (await getPlan(sql(), planId))!;
				expect(after.steps.slice(3).every((s) => s.executionId === null)).toBe(true);
				expect((await ranOn(172)).some((l) => l.includes('/etc/systemd/system/app.service'))).toBe(false);
				const notes = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'system' && JSON.stringify(m.parts).includes('stopped by the operator'));
				expect(notes).toHaveLength(1);
				expect(await sql().begin((tx) => stopPlan(tx, planId, operatorId))).toBeNull();
			} finally {
				await pve.setFault('hang', null);
			}
		},
		scaled(120_000)
	);

	it(
		'a model that requests a step of the running plan itself is told it runs as part of the plan (no second approval)',
		async () => {
			const { sessionId, planId } = await proposed(173);
			await pve.setFault('hang', 'apt-get');
			try {
				llm.push({ text: 'stopped' });
				await approve(planId);
				await waitUntil(async () => (await pve.hangs()).some((h) => alive(h.pid)), 'step 3 to hang', { timeoutMs: 60_000 });
				const step4 = deployPlan(173).steps[3];
				const r = await requestExecution(sessionId, { target: step4.target, action: step4.action, params: step4.params, reason: 'next' });
				expect(r).toMatchObject({ error: expect.stringContaining('this step runs as part of the approved plan') });
				expect((await listSessionExecutions(sql(), sessionId)).filter((e) => e.action === 'pct_push')).toHaveLength(0);
				await sql().begin((tx) => stopPlan(tx, planId, operatorId));
				await waitUntil(async () => (await planStatus(planId)) === 'cancelled', 'the plan to stop', { timeoutMs: 30_000, intervalMs: 100 });
				await waitUntil(async () => (await continuationReplies(sessionId)).find((m) => m.status === 'complete'), 'the reply', {
					timeoutMs: 30_000,
					intervalMs: 100
				});
			} finally {
				await pve.setFault('hang', null);
			}
		},
		scaled(120_000)
	);
});
