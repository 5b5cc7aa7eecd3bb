// Issue #42 item 9: an execution whose worker process is SIGKILLed mid-step is finished by a live
// worker when its action is repeatable (pct_start, pct_stop…): under the same approval, once,
// audited as a resume — the earlier command stopped on the host first, the effect read back, the
// command run again only when the effect is missing, then verified. A destroy still ends
// interrupted. Real worker processes, the SSH double (its `slow` fault holds the command mid-step),
// the scripted model, a real Postgres.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { claimExecution, getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { getPlan, insertPlan } from '../../src/lib/server/db/queries/plans';
import { operatorDecidesPlan } from '../../src/lib/server/executions/decisions';
import { prepareExecution, type PreparedExecution } from '../../src/lib/server/executions/prepare';
import { listDeadProcesses } from '../../src/lib/server/db/queries/workers';
import { enqueueJob } from '../../src/lib/server/jobs/enqueue';
import { recoverDeadProcesses } from '../../src/lib/server/recovery/dead-processes';
import { requestCancel, sweep } from '../../src/lib/server/executions/lifecycle';
import { runExecution } from '../../src/lib/server/executions/runner';
import { randomUUID } from 'node:crypto';
import { alive, requestApproved, freshSession, newOperator, newSession, waitUntil } from '../helpers/executions';
import { useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { llm, pve, spawnWorker, workersReady } = useStage({
	model: { keep: true },
	spawned: true,
	sync: false,
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 101, hostname: 'start-me', status: 'stopped' },
				{ vmid: 102, hostname: 'stop-me', status: 'running' },
				{ vmid: 103, hostname: 'destroy-me', status: 'stopped' },
				{ vmid: 104, hostname: 'plan-me', status: 'stopped' },
				{ vmid: 105, hostname: 'term-me', status: 'stopped' },
				{ vmid: 106, hostname: 'cancel-me', status: 'stopped' }
			]
		}
	]
});
beforeAll(() => llm.setFallback(() => ({ text: 'Noted.' })));

/** Requests and approves `action` on CT `vmid`; returns the execution's id. */
async function approved(action: string, vmid: number, tag: string): Promise<{ id: string; sessionId: string }> {
	const operatorId = await newOperator(`resume-${tag}`);
	const sessionId = await newSession(operatorId);
	const { id } = await requestApproved(sessionId, operatorId, { target: `lxc:strong/${vmid}`, action, params: {}, reason: tag });
	return { id, sessionId };
}

/**
 * Waits until the approved command runs on the host, its process group recorded, and is held
 * there by the `slow` fault (it logs its argv, then reads the faults, then waits); then lifts the
 * fault, which that invocation has read already, so that a later one does not wait.
 */
async function heldMidStep(id: string, label: string, argv: string[]): Promise<{ e: ExecutionRow; pgid: number }> {
	const e = await waitUntil(
		async () => {
			const e = await getExecution(sql(), id);
			return e?.status === 'running' && e.steps.some((s) => s.label === label && s.pgid && s.finishedAt === undefined) ? e : null;
		},
		`${label} to be running on the host`,
		{ timeoutMs: 60_000, intervalMs: 50 }
	);
	await waitUntil(async () => (await ran(...argv)) === 1, `${argv.join(' ')} to reach the host's tool`, { timeoutMs: 30_000, intervalMs: 20 });
	await pve.setFault('slow', null);
	return { e, pgid: e.steps.find((s) => s.label === label)!.pgid! };
}

const terminal = (id: string, timeoutMs = 60_000) =>
	waitUntil(
		async () => {
			const e = await getExecution(sql(), id);
			return e && ['succeeded', 'failed', 'cancelled', 'interrupted'].includes(e.status) ? e : null;
		},
		`execution ${id} to end`,
		{ timeoutMs, intervalMs: 100 }
	);

const ran = async (...argv: string[]) => (await pve.argvLog()).filter((a) => argv.every((x, i) => a[i] === x)).length;

async function audits(id: string, action: string): Promise<number> {
	const [row] = await sql()<{ n: number }[]>`select count(*)::int as n from audit_log where subject_id = ${id} and action = ${action}`;
	return row.n;
}

async function runnerPid(id: string): Promise<number | undefined> {
	const [row] = await sql()<{ pid: number }[]>`select w.pid from executions e join worker_processes w on w.id = e.runner where e.id = ${id}`;
	return row?.pid;
}

describe('an execution whose worker is SIGKILLed mid-step', () => {
	it(
		'pct_destroy (not safe to repeat) still ends interrupted with its leftovers; nothing resumes it',
		async () => {
			const a = spawnWorker();
			await workersReady(a);
			await pve.setFault('slow', { tool: 'pct', match: 'destroy 103', ms: 600_000 });
			const { id } = await approved('pct_destroy', 103, 'destroy');
			const { pgid } = await heldMidStep(id, 'pct destroy', ['pct', 'destroy', '103']);
			a.child.kill('SIGKILL');
			await a.exited;
			await waitUntil(async () => (await listDeadProcesses(sql())).length === 1, 'Postgres to notice the closed connection', {
				timeoutMs: 10_000,
				intervalMs: 50
			});
			const [r] = await recoverDeadProcesses(sql());
			expect(r.handedOver).toEqual([]);
			expect(r.interrupted).toEqual([id]);
			expect(alive(pgid)).toBe(false);
			const e = (await getExecution(sql(), id))!;
			expect(e.status).toBe('interrupted');
			expect(e.resumes).toBe(0);
			expect(e.leftovers).toBe('CT 103 exists on strong, stopped');
			expect(await ran('pct', 'destroy', '103')).toBe(1);
			expect(await audits(id, 'execution.resumed')).toBe(0);
		},
		scaled(150_000)
	);

	it(
		'pct_start: two workers race to resume it, one does; the start runs again because the read-back finds it stopped, and is verified',
		async () => {
			const a = spawnWorker();
			await workersReady(a);
			await pve.setFault('slow', { tool: 'pct', match: 'start 101', ms: 600_000 });
			const { id, sessionId } = await approved('pct_start', 101, 'start');
			const { e: before, pgid } = await heldMidStep(id, 'pct start', ['pct', 'start', '101']);
			a.child.kill('SIGKILL');
			await a.exited;
			await waitUntil(async () => (await listDeadProcesses(sql())).length === 1, 'Postgres to notice the closed connection', {
				timeoutMs: 10_000,
				intervalMs: 50
			});
			const [r] = await recoverDeadProcesses(sql());
			expect(r.handedOver).toEqual([id]);
			expect(r.interrupted).toEqual([]);
			expect((await getExecution(sql(), id))!).toMatchObject({ status: 'approved', resumes: 1 });
			// A second copy of the run job: both workers start with a job for it and race for the claim.
			await enqueueJob(sql(), 'executions__run', { executionId: id }, { jobKey: `race:${id}` });
			const [b, c] = [spawnWorker(), spawnWorker()];
			await workersReady(b, c);

			const e = await terminal(id);
			expect(e.status).toBe('succeeded');
			expect(e.hash).toBe(before.hash);
			expect(e.result).toMatch(
				/^CT 101 started \(resumed after the worker stopped — its worker process \(pid \d+ on .+\) died: the read-back found it not done, so it ran again and was verified\)$/
			);
			expect(alive(pgid)).toBe(false);
			expect(e.steps.map((s) => [s.label, s.kind ?? null])).toEqual([
				['pct start', null],
				['read back: pct status 101', 'resume'],
				['pct start', null],
				['verify: pct status 101', 'resume']
			]);
			expect(e.steps[0].stop).toMatch(/^(stopped|gone)$/);
			expect(e.steps[3].verified).toBe(true);
			expect((await pve.containers()).find((c) => c.vmid === 101)?.status).toBe('running');
			// The killed attempt (held before it did anything) and the resume's: two invocations, one start.
			expect(await ran('pct', 'start', '101')).toBe(2);
			// One resume, under the one approval that names the hash.
			expect(await audits(id, 'execution.resumed')).toBe(1);
			const approvals = await sql()<{ hash: string }[]>`select hash from approvals where execution_id = ${id}`;
			expect(approvals).toEqual([{ hash: before.hash }]);
			await waitUntil(async () => {
				const [j] = await sql()<{ n: number }[]>`
				select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
				where t.identifier = 'executions__run' and j.payload ->> 'executionId' = ${id}`;
				return j.n === 0;
			}, 'both run jobs to be done');
			// The agent is told it was resumed.
			const note = await waitUntil(async () => {
				const [m] = await sql()<{ text: string }[]>`
				select parts::text as text from messages where session_id = ${sessionId} and role = 'system' and parts::text like ${`%execution ${id}%`}`;
				return m?.text;
			}, 'the continuation note');
			expect(note).toContain('resumed after the worker stopped');
		},
		scaled(240_000)
	);

	it(
		'pct_stop whose effect landed before the kill: a live worker resumes it by itself and runs nothing again',
		async () => {
			const [b, c] = [spawnWorker(), spawnWorker()];
			await workersReady(b, c);
			await pve.setFault('slow', { tool: 'pct', match: 'stop 102', ms: 600_000 });
			const { id } = await approved('pct_stop', 102, 'stop');
			await heldMidStep(id, 'pct stop', ['pct', 'stop', '102']);
			// The host stopped it (as if the command got that far) before the worker died.
			await pve.patchCt(102, { status: 'stopped' });
			const pid = await runnerPid(id);
			const victim = [b, c].find((w) => w.pid === pid)!;
			victim.child.kill('SIGKILL');
			await victim.exited;

			const e = await terminal(id);
			expect(e.status).toBe('succeeded');
			expect(e.result).toMatch(/^CT 102 stopped \(resumed after the worker stopped — .*: the read-back found it already done, so nothing ran again\)$/);
			expect(e.steps.map((s) => s.label)).toEqual(['pct stop', 'read back: pct status 102']);
			expect(await ran('pct', 'stop', '102')).toBe(1);
			expect(await audits(id, 'execution.resumed')).toBe(1);
		},
		scaled(240_000)
	);

	it(
		'a plan whose step was resumed goes on to its next step and ends succeeded',
		async () => {
			const operatorId = await newOperator('resume-plan');
			const sessionId = await newSession(operatorId, 'plan');
			const steps: Array<PreparedExecution & { why: string }> = [];
			for (const s of [
				{ target: 'strong/104', action: 'pct_start', params: {}, reason: 'start it' },
				{ target: 'strong/104', action: 'pct_status', params: {}, reason: 'check it' }
			]) {
				const p = await prepareExecution(s);
				if ('error' in p) throw new Error(p.error);
				steps.push({ ...p, why: s.reason });
			}
			await pve.setFault('slow', { tool: 'pct', match: 'start 104', ms: 600_000 });
			const plan = await sql().begin((tx) => insertPlan(tx, sessionId, 'Start 104', steps));
			await sql().begin((tx) => operatorDecidesPlan(tx, plan.id, { decision: 'approved', operatorId, credential: freshSession() }));
			const a = spawnWorker();
			const step1 = await waitUntil(async () => (await getPlan(sql(), plan.id))?.steps[0].executionId, 'step 1 to be made', {
				timeoutMs: 90_000,
				intervalMs: 100
			});
			await heldMidStep(step1, 'pct start', ['pct', 'start', '104']);
			a.child.kill('SIGKILL');
			await a.exited;
			await waitUntil(async () => (await listDeadProcesses(sql())).length === 1, 'Postgres to notice the closed connection', {
				timeoutMs: 10_000,
				intervalMs: 50
			});
			expect((await recoverDeadProcesses(sql()))[0].handedOver).toEqual([step1]);
			spawnWorker();

			const done = await waitUntil(
				async () => {
					const p = await getPlan(sql(), plan.id);
					return p && p.status !== 'approved' ? p : null;
				},
				'the plan to end',
				{ timeoutMs: 90_000, intervalMs: 100 }
			);
			expect(done.status).toBe('succeeded');
			expect((await getExecution(sql(), step1))!).toMatchObject({ status: 'succeeded', resumes: 1 });
			expect((await getExecution(sql(), done.steps[1].executionId!))!.status).toBe('succeeded');
			expect((await pve.containers()).find((c) => c.vmid === 104)?.status).toBe('running');
		},
		scaled(240_000)
	);

	it(
		'SIGTERM mid pct_start: the stopping worker stops its command and hands the run over; another worker resumes it',
		async () => {
			const [b, c] = [spawnWorker(), spawnWorker()];
			await workersReady(b, c);
			await pve.setFault('slow', { tool: 'pct', match: 'start 105', ms: 600_000 });
			const { id } = await approved('pct_start', 105, 'sigterm');
			await heldMidStep(id, 'pct start', ['pct', 'start', '105']);
			const pid = await runnerPid(id);
			const victim = [b, c].find((w) => w.pid === pid)!;
			victim.child.kill('SIGTERM');
			expect((await victim.exited).signal).toBe(null);
			const e = await terminal(id);
			expect(e.status).toBe('succeeded');
			expect(e.resumedBecause).toBe('its worker process was stopping (a restart or shutdown)');
			expect(e.steps.map((s) => s.label)).toEqual(['pct start', 'read back: pct status 105', 'pct start', 'verify: pct status 105']);
			expect(e.steps[0].stop).toMatch(/^(stopped|gone)$/);
			expect(await ran('pct', 'start', '105')).toBe(2);
			expect(await audits(id, 'execution.resumed')).toBe(1);
		},
		scaled(240_000)
	);

	it(
		'the sweep hands over a run whose runner is gone; Cancel while it waits ends it interrupted, and nothing runs again',
		async () => {
			const { id } = await approved('pct_start', 106, 'cancel');
			// Claimed by a process that is not registered (any more): the sweep's case.
			expect(await claimExecution(sql(), id, 60, randomUUID())).not.toBeNull();
			await sweep(sql());
			expect((await getExecution(sql(), id))!).toMatchObject({ status: 'approved', resumes: 1, resumedBecause: 'the worker process running it is gone' });
			expect(await sql().begin((tx) => requestCancel(tx, id, 'op'))).toBe('requested');
			await runExecution(id);
			const e = (await getExecution(sql(), id))!;
			expect(e.status).toBe('interrupted');
			expect(e.error).toBe('cancelled by the operator before it was resumed; its earlier run may have partly run');
			expect(await ran('pct', 'start', '106')).toBe(0);
		},
		scaled(60_000)
	);
});
