// A worker SIGKILLed during step 2 of an approved plan: the step ends `interrupted` (recovery),
// the plan stops there, steps 3–6 never run, and the agent is told once — never a step twice.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { getPlan, insertPlan } from '../../src/lib/server/db/queries/plans';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { operatorDecidesPlan } from '../../src/lib/server/executions/decisions';
import { advancePlan } from '../../src/lib/server/executions/plans';
import { prepareExecution, type PreparedExecution } from '../../src/lib/server/executions/prepare';
import { runExecution } from '../../src/lib/server/executions/runner';
import { recoverDeadProcesses } from '../../src/lib/server/recovery/dead-processes';
import { listDeadProcesses } from '../../src/lib/server/db/queries/workers';
import { freshSession, jobs, newOperator, newSession, waitUntil } from '../helpers/executions';
import { startWorkerChild } from '../helpers/spawn';
import { scaled } from '../helpers/time';
import { useStage } from '../helpers/stage';

const { llm, pve, dbUrl } = useStage({
	model: true,
	sync: false,
	hosts: [{ nodeName: 'strong', seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] }]
});
const TEMPLATE = 'ubuntu-22.04-standard_22.04-1_amd64.tar.zst';

beforeAll(async () => {
	await pve.setFault('create', 'hang');
});

describe('a plan whose worker dies', () => {
	it(
		'SIGKILL during step 2: the step ends interrupted, the plan stops there, the agent is told once',
		async () => {
			const operatorId = await newOperator();
			const sessionId = await newSession(operatorId, 'deploy');
			const planned = [
				{ target: 'strong', action: 'pveam_download', params: { storage: 'local', template: TEMPLATE }, reason: 'template' },
				{
					target: 'strong',
					action: 'pct_create',
					params: { vmid: '180', hostname: 'app', template: `local:vztmpl/${TEMPLATE}`, start: true },
					reason: 'the CT'
				},
				{ target: 'strong/180', action: 'pct_exec', params: { argv: ['apt-get', 'install', '-y', 'nginx'] }, reason: 'install' },
				{
					target: 'strong/180',
					action: 'pct_push',
					params: { path: '/etc/systemd/system/app.service', content: '[Service]\nExecStart=/bin/true\n' },
					reason: 'unit'
				},
				{ target: 'strong/180', action: 'systemctl', params: { unit: 'app.service', op: 'enable' }, reason: 'enable' },
				{ target: 'strong/180', action: 'ct_http_check', params: { port: 8080 }, reason: 'verify' }
			];
			const steps: Array<PreparedExecution & { why: string }> = [];
			for (const s of planned) {
				const p = await prepareExecution(s);
				if ('error' in p) throw new Error(p.error);
				steps.push({ ...p, why: s.reason });
			}
			const plan = await sql().begin((tx) => insertPlan(tx, sessionId, 'Deploy app', steps));
			await sql().begin((tx) => operatorDecidesPlan(tx, plan.id, { decision: 'approved', operatorId, credential: freshSession() }));

			const { child, log, exited } = startWorkerChild(dbUrl());
			try {
				// The child's worker runs step 1, then step 2's `pct create` hangs on the host.
				await waitUntil(
					async () => (await pve.hangs()).length > 0,
					() => `step 2 to hang:\n${log.out}`,
					{ timeoutMs: 60_000, intervalMs: 100 }
				);
				const during = (await getPlan(sql(), plan.id))!;
				expect(during.steps.map((s) => Boolean(s.executionId))).toEqual([true, true, false, false, false, false]);
				const step2 = during.steps[1].executionId!;
				expect((await getExecution(sql(), during.steps[0].executionId!))!.status).toBe('succeeded');
				expect((await getExecution(sql(), step2))!.status).toBe('running');

				child.kill('SIGKILL');
				expect((await exited).signal).toBe('SIGKILL');
				await waitUntil(async () => (await listDeadProcesses(sql())).length === 1, 'Postgres to notice the closed connection', {
					timeoutMs: 10_000,
					intervalMs: 50
				});
				const [r] = await recoverDeadProcesses(sql());
				expect(r.interrupted).toEqual([step2]);
				expect((await getExecution(sql(), step2))!.status).toBe('interrupted');

				// What recovery queued moves the plan on (here run by the test: no worker is left).
				expect((await jobs('plans__advance')).map((j) => j.payload)).toContainEqual({ planId: plan.id });
				expect(await advancePlan(plan.id)).toBe('ended');
				expect(await advancePlan(plan.id)).toBe('nothing');
				const after = (await getPlan(sql(), plan.id))!;
				expect(after.status).toBe('interrupted');
				expect(after.steps.slice(2).every((s) => s.executionId === null)).toBe(true);
				// Step 2 never runs again, whoever picks up its job.
				await runExecution(step2);
				expect((await pve.argvLog()).filter((a) => a[0] === 'pct' && a[1] === 'create')).toHaveLength(1);
				// Not a continuation per step: one for the plan.
				const continuations = (await jobs('agent__continue_session')).map((j) => j.payload);
				expect(continuations).toEqual([{ sessionId, planId: plan.id }]);

				llm.push({ text: 'The create was interrupted; CT 180 exists half made. I will check it before anything else.' });
				expect(await continueSession(sessionId)).toBe('turn');
				expect(await continueSession(sessionId)).toBe('nothing');
				expect(llm.requests).toHaveLength(1);
				const sent = JSON.stringify(llm.requests[0].body);
				expect(sent).toContain('stopped at step 2 of 6 (interrupted)');
				expect(sent).toContain('worker lost');
				expect(sent).toContain('Steps 3, 4, 5, 6 were not run');
			} finally {
				child.kill('SIGKILL');
			}
		},
		scaled(120_000)
	);
});
