// Truth after cancels and crashes, against the SSH double with real hangs: a cancel acts within
// 2 s even when the remote command hangs, a cancel mid-step is "interrupted" (it may have partly
// run) with what it left behind read back, a cancel during the pre-check is only a cancel, and a
// plan step runs at most once per (unexpired) decision.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { continueSession, executionNote } from '../../src/lib/server/agent/continuation';
import { decidePlan, getPlan, insertPlan } from '../../src/lib/server/db/queries/plans';
import { prepareExecution, type PreparedExecution } from '../../src/lib/server/executions/prepare';
import { advancePlan } from '../../src/lib/server/executions/plans';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { requestCancel, sweep } from '../../src/lib/server/executions/lifecycle';
import { TERMINAL } from '../../src/lib/types/executions';
import { readBack } from '../../src/lib/server/executions/leftovers';
import { DEBIAN, alive, requestApproved, newOperator, newSession, waitUntil } from '../helpers/executions';
import { STRONG, useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { pve } = useStage({ hosts: [STRONG] });
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	operatorId = await newOperator('truth-admin');
	sessionId = await newSession(operatorId, 'truth');
});
beforeEach(async () => {
	await pve.setFault('create', null);
	await pve.setFault('hang', null);
});

const approved = (input: Record<string, unknown>, session = sessionId): Promise<ExecutionRow> => requestApproved(session, operatorId, input);
const load = async (id: string) => (await getExecution(sql(), id))!;
const cancel = (id: string) => sql().begin((tx) => requestCancel(tx, id, operatorId));

describe('cancel', () => {
	it('a hung pct create: "cancelling" at once, interrupted within 2 s, and what it left is read back', async () => {
		await pve.setFault('create', 'hang');
		const e = await approved({ target: 'strong', action: 'pct_create', params: { vmid: '105', hostname: 'typetype', template: DEBIAN }, reason: 'r' });
		const hangsBefore = (await pve.hangs()).length;
		const run = runExecution(e.id);
		const hung = await waitUntil(async () => (await pve.hangs())[hangsBefore] ?? null, 'pct create to hang');
		expect(await cancel(e.id)).toBe('requested');
		const asked = Date.now();
		expect((await load(e.id)).cancelRequestedAt).not.toBeNull();
		await waitUntil(async () => TERMINAL.includes((await load(e.id)).status), 'the execution to end', { timeoutMs: 10_000, intervalMs: 50 });
		const took = Date.now() - asked;
		expect(took).toBeLessThan(2_000);
		await run;
		const done = await load(e.id);
		expect(done.status).toBe('interrupted');
		expect(done.error).toMatch(/cancelled by the operator while pct create .* was running; it was stopped on the host and may have partly run$/);
		expect(done.leftovers).toBe('CT 105 exists on strong, stopped, locked: create');
		await waitUntil(async () => !alive(hung.pid), 'the hung remote command to be stopped', { timeoutMs: 10_000 });
		// The agent is told what happened, what is left, and to look before acting.
		const note = executionNote(done);
		expect(note).toContain('interrupted');
		expect(note).toContain('Left behind: CT 105 exists on strong, stopped, locked: create');
		expect(note).toContain("check the target's state before anything else");
		console.log(`[truth] hung pct create cancelled → interrupted in ${took} ms`);
	});

	it('a cancel while the pre-check hangs is reported as a cancel, never as anything else', async () => {
		await pve.setFault('hang', 'pct');
		const e = await approved({ target: 'lxc:strong/101', action: 'pct_start', params: {}, reason: 'r' });
		const hangsBefore = (await pve.hangs()).length;
		const run = runExecution(e.id);
		await waitUntil(async () => ((await pve.hangs()).length > hangsBefore ? true : null), 'pct status to hang');
		await cancel(e.id);
		const asked = Date.now();
		await run;
		expect(Date.now() - asked).toBeLessThan(2_000);
		const done = await load(e.id);
		expect(done.status).toBe('cancelled');
		expect(done.error).toMatch(/before anything ran/);
		expect(done.steps).toEqual([]);
		expect(done.leftovers).toBeNull();
		expect((await pve.argvLog()).filter((a) => a[0] === 'pct' && a[1] === 'start')).toEqual([]);
	});
});

describe('clean-up of what an interrupted create left', () => {
	it('pct_unlock then pct_destroy, each approved, remove the half-made CT', async () => {
		expect((await pve.containers()).find((c) => c.vmid === 105)).toMatchObject({ lock: 'create' });
		const destroyFirst = await approved({ target: 'lxc:strong/105', action: 'pct_destroy', params: {}, reason: 'r' });
		await runExecution(destroyFirst.id);
		expect((await load(destroyFirst.id)).error).toMatch(/locked/);
		const unlock = await approved({ target: 'lxc:strong/105', action: 'pct_unlock', params: {}, reason: 'r' });
		expect(unlock.commandPreview).toBe("'pct' 'unlock' '105'");
		await runExecution(unlock.id);
		expect((await load(unlock.id)).status).toBe('succeeded');
		const destroy = await approved({ target: 'lxc:strong/105', action: 'pct_destroy', params: {}, reason: 'r' });
		await runExecution(destroy.id);
		expect((await load(destroy.id)).status).toBe('succeeded');
		expect((await pve.containers()).find((c) => c.vmid === 105)).toBeUndefined();
	});
});

describe('worker lost', () => {
	it(
		'an execution whose worker died is interrupted; the continuation reads its target back and says so',
		async () => {
			const s = await newSession(operatorId, 'lost');
			const e = await approved({ target: 'strong', action: 'pct_create', params: { vmid: '150', hostname: 'half', template: DEBIAN }, reason: 'r' }, s);
			// As the dead worker left it: running, a step started, the CT half-made, the lease gone.
			await pve.setFault('create', 'hang');
			const hangsBefore = (await pve.hangs()).length;
			const run = runExecution(e.id);
			await waitUntil(async () => ((await pve.hangs()).length > hangsBefore ? true : null), 'pct create to start');
			await sql()`update executions set lease_until = now() - interval '1 second' where id = ${e.id}`;
			expect((await sweep(sql())).lost).toBe(1);
			await run; // this runner notices its lease is gone within a heartbeat and stops
			const lost = await load(e.id);
			expect(lost.status).toBe('interrupted');
			expect(lost.error).toMatch(/^worker lost: .*it may have partly run/);
			await sql()`update assent_windows set revoked_at = now() where session_id = ${s}`;
			expect(await continueSession(s)).toBe('window-closed');
			expect((await load(e.id)).leftovers).toBe('CT 150 exists on strong, stopped, locked: create');
			const [note] = await sql()<{ text: string }[]>`
			select p->'data'->>'text' as text from messages, jsonb_array_elements(parts) p where session_id = ${s} and role = 'system' and p->'data'->>'kind' = 'execution'`;
			expect(note.text).toContain('Left behind: CT 150 exists on strong, stopped, locked: create');
			expect(note.text).toContain("check the target's state");
		},
		scaled(40_000)
	);
});

describe('plan approvals', () => {
	async function plan(steps: Array<Record<string, unknown>>, ttlHours = 24) {
		const prepared: Array<PreparedExecution & { why: string }> = [];
		for (const s of steps) {
			const p = await prepareExecution(s);
			if ('error' in p) throw new Error(p.error);
			prepared.push({ ...p, why: 'w' });
		}
		const s = await newSession(operatorId, 'plan');
		const row = await sql().begin(async (tx) => decidePlan(tx, (await insertPlan(tx, s, 'p', prepared)).id, 'approved', operatorId, ttlHours));
		return { sessionId: s, plan: row! };
	}
	const req = async (input: Record<string, unknown>, s: string): Promise<RequestOutcome> => {
		const r = await requestExecution(s, input);
		if ('error' in r) throw new Error(r.error);
		return r;
	};

	it('expire: a plan nothing moved on for longer than the approval TTL starts no step', async () => {
		const step = { target: 'lxc:strong/101', action: 'pct_start', params: {}, reason: 'r' };
		const { sessionId: s, plan: p } = await plan([step]);
		expect(p.expiresAt).not.toBeNull();
		await sql()`update plans set decided_at = now() - interval '90 days', expires_at = now() - interval '89 days' where id = ${p.id}`;
		expect(await advancePlan(p.id)).toBe('ended');
		const after = (await getPlan(sql(), p.id))!;
		expect(after).toMatchObject({ status: 'failed', error: expect.stringContaining('approval expired') });
		expect(after.steps[0].executionId).toBeNull();
		// Once it has ended, the same request is an ordinary one.
		const r = await req(step, s);
		expect(r.via).toBe('approval');
		expect(r.execution.status).toBe('awaiting_approval');
	});

	it('a step runs at most once per decision: after it failed, the plan has ended and the same request waits for a new approval', async () => {
		const step = { target: 'lxc:strong/100', action: 'pct_destroy', params: {}, reason: 'r' };
		const { sessionId: s, plan: p } = await plan([step]);
		// While the plan runs, the agent cannot ask for its step a second time.
		await expect(requestExecution(s, step)).resolves.toMatchObject({ error: expect.stringContaining('runs as part of the approved plan') });
		expect(await advancePlan(p.id)).toBe('running');
		const first = (await getPlan(sql(), p.id))!.steps[0].executionId!;
		expect((await load(first)).decision).toMatchObject({ route: 'plan' });
		await runExecution(first);
		expect((await load(first)).status).toBe('failed'); // CT 100 is running
		expect(await advancePlan(p.id)).toBe('ended');
		expect(await advancePlan(p.id)).toBe('nothing');
		expect((await getPlan(sql(), p.id))!).toMatchObject({ status: 'failed', steps: [{ executionId: first }] });
		// Stopped since (a running one is now refused before approval): the same request is a new one, waiting for its own approval.
		await pve.patchCt(100, { status: 'stopped' });
		try {
			const again = await req(step, s);
			expect(again.via).toBe('approval');
			expect(again.execution.status).toBe('awaiting_approval');
		} finally {
			await pve.patchCt(100, { status: 'running' });
		}
	});
});

describe('read-back of what a mutation left', () => {
	const of = (vmid: string) => ({
		target: `lxc:strong/${vmid}`,
		params: { vmid },
		hostName: 'strong',
		classification: 'config_mutation' as const,
		action: 'pct_create'
	});

	it('a guest is absent only when pct says its config does not exist', async () => {
		expect(await readBack(of('199'))).toEqual({ text: 'CT 199 does not exist on strong', reached: true });
		expect(await readBack(of('100'))).toEqual({ text: 'CT 100 exists on strong, running', reached: true });
	});

	it('a failing pct status is no answer: "could not read CT 100 back", never "does not exist", and it is read again later', async () => {
		await pve.setFault('fail', { tool: 'pct', match: 'status 100', exitCode: 255, stderr: 'ipcc_send_rec[1] failed: Connection refused' });
		try {
			const got = await readBack(of('100'));
			expect(got.reached).toBe(false);
			expect(got.text).toBe('could not read CT 100 back from strong: pct status exited with 255: ipcc_send_rec[1] failed: Connection refused');
			expect(got.text).not.toMatch(/does not exist/);
		} finally {
			await pve.setFault('fail', null);
		}
	});
});
