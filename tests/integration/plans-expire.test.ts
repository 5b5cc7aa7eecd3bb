// A proposed plan waits for approval only NOMOS_APPROVAL_TTL_H, as an execution request does. Past
// its expires_at no route approves (or denies) it — a click in the browser, the API with an approve
// token, the domain function itself, typed "yes" — and nothing of it runs, while a real worker runs
// a fresh plan approved the same way; the sweep marks it expired (announced on the event path)
// and its agent is told once, in words that let it propose again when asked.
import { sessionCaller, tokenCaller } from '../helpers/callers';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertApiToken, type ApiTokenAuth } from '../../src/lib/server/db/queries/api-tokens';
import { createAuthSession } from '../../src/lib/server/db/queries/operators';
import { expireStalePlans, getPlan, insertPlan, type PlanRow } from '../../src/lib/server/db/queries/plans';
import { createOperator } from '../../src/lib/server/auth/accounts';
import { operatorDecidesPlan, PLAN_EXPIRED } from '../../src/lib/server/executions/decisions';
import { sweep } from '../../src/lib/server/executions/lifecycle';
import { prepareExecution } from '../../src/lib/server/executions/prepare';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { Refusal } from '../../src/lib/server/refusal';
import { plans__advance } from '../../tasks/plans__advance';
import { executions__run } from '../../tasks/executions__run';
import { freshSession, jobs, newSession, waitUntil } from '../helpers/executions';
import { STRONG, useStage } from '../helpers/stage';
import { waitForLockWaiter } from '../helpers/db';

const { pve } = useStage({
	env: { NOMOS_SNAPSHOT_BEFORE: 'off' },
	hosts: [STRONG],
	worker: { concurrency: 2, taskList: { plans__advance, executions__run } }
});
let admin: { id: string; username: string; role: 'admin' };
let token: ApiTokenAuth;

beforeAll(async () => {
	const op = await createOperator(sql(), 'expiry-admin', 'correct horse battery', 'admin');
	admin = { ...op, role: 'admin' };
	const t = await insertApiToken(sql(), admin.id, { name: 'approver', scope: 'approve', days: 7 });
	token = { id: t.listing.id, name: 'approver', scope: 'approve' };
});

const browser = async (operatorId = admin.id) => sessionCaller((await createAuthSession(sql(), operatorId, 1)).token);
const viaToken = () => tokenCaller(admin, token);

/** A one-step plan the catalogue prepares for real (its before-approval read included). */
async function propose(sessionId: string, action: 'pct_start' | 'pct_stop', vmid: number): Promise<PlanRow> {
	const p = await prepareExecution({ target: `strong/${vmid}`, action, params: {}, reason: `${action} ${vmid}` });
	if ('error' in p) throw new Error(p.error);
	return sql().begin((tx) => insertPlan(tx, sessionId, `${action} CT ${vmid}`, [{ ...p, why: 'asked' }]));
}

const ctStatus = async (vmid: number) => (await pve.containers()).find((c) => c.vmid === vmid)?.status;
const planExecutions = async (planId: string) => (await sql()`select id from executions where plan_id = ${planId}`).length;
const audits = async (planId: string) =>
	(await sql()<{ action: string }[]>`select action from audit_log where subject_id = ${planId} order by id`).map((a) => a.action);
const jobsOf = async (task: string, planId: string) => (await jobs(task)).filter((j) => j.payload.planId === planId).length;

describe('a proposed plan expires', () => {
	it('is proposed with the same wait as an execution request (NOMOS_APPROVAL_TTL_H, 24 h by default)', async () => {
		const plan = await propose(await newSession(admin.id, 'ttl'), 'pct_start', 101);
		const [r] = await sql()<{ h: number }[]>`select extract(epoch from expires_at - created_at) / 3600 as h from plans where id = ${plan.id}`;
		expect(Number(r.h)).toBeCloseTo(24, 3);
	});

	it('past its expires_at no route approves or denies it, nothing runs, while a fresh plan approved the same way runs', async () => {
		const sessionId = await newSession(admin.id, 'expired plan');
		const stale = await propose(sessionId, 'pct_start', 101);
		await sql()`update plans set expires_at = now() - interval '1 second' where id = ${stale.id}`;

		const conflict = { code: 'CONFLICT', message: PLAN_EXPIRED };
		await expect((await browser()).executions.decidePlan({ planId: stale.id, decision: 'approved' })).rejects.toMatchObject(conflict);
		await expect(viaToken().executions.decidePlan({ planId: stale.id, decision: 'approved' })).rejects.toMatchObject(conflict);
		await expect((await browser()).executions.decidePlan({ planId: stale.id, decision: 'denied' })).rejects.toMatchObject(conflict);
		await expect(
			sql().begin((tx) => operatorDecidesPlan(tx, stale.id, { decision: 'approved', operatorId: admin.id, credential: freshSession() }))
		).rejects.toBeInstanceOf(Refusal);
		// Typed assent names executions, never a plan: "yes" under the card approves nothing.
		await (await browser()).chat.send({ sessionId, text: 'yes', shownExecutionIds: [] });

		const after = (await getPlan(sql(), stale.id))!;
		expect(after).toMatchObject({ status: 'proposed', decidedAt: null, decidedBy: null });
		expect(await audits(stale.id)).toEqual([]);
		expect(await jobsOf('plans__advance', stale.id)).toBe(0);
		expect((await sql()`select 1 from assent_windows where session_id = ${sessionId}`).length).toBe(0);

		// The same routes approve a fresh plan, and the worker runs it: had the stale one been queued, it would have run too.
		const fresh = await propose(await newSession(admin.id, 'fresh plan'), 'pct_stop', 100);
		expect(await (await browser()).executions.decidePlan({ planId: fresh.id, decision: 'approved' })).toMatchObject({ status: 'approved' });
		await waitUntil(async () => (await getPlan(sql(), fresh.id))!.status === 'succeeded', 'the fresh plan to succeed', { timeoutMs: 20_000 });
		expect(await ctStatus(100)).toBe('stopped');
		expect(await ctStatus(101)).toBe('stopped');
		expect(await planExecutions(stale.id)).toBe(0);
		expect((await pve.argvLog()).some((a) => a.join(' ').includes('start 101'))).toBe(false);
	});

	it('exactly at its expires_at it is expired (the decision and the sweep read the same clock)', async () => {
		const plan = await propose(await newSession(admin.id, 'boundary'), 'pct_start', 101);
		await expect(
			sql().begin(async (tx) => {
				await tx`update plans set expires_at = now() where id = ${plan.id}`;
				return operatorDecidesPlan(tx, plan.id, { decision: 'approved', operatorId: admin.id, credential: freshSession() });
			})
		).rejects.toMatchObject({ message: PLAN_EXPIRED });
		expect((await getPlan(sql(), plan.id))!.status).toBe('proposed');
	});

	it('two operators approving at once: one decision, one run queued', async () => {
		const p = await propose(await newSession(admin.id, 'race'), 'pct_start', 100);
		const [a, b] = await Promise.allSettled([
			(await browser()).executions.decidePlan({ planId: p.id, decision: 'approved' }),
			viaToken().executions.decidePlan({ planId: p.id, decision: 'approved' })
		]);
		const ok = [a, b].filter((r) => r.status === 'fulfilled');
		const refused = [a, b].filter((r): r is PromiseRejectedResult => r.status === 'rejected');
		expect(ok).toHaveLength(1);
		expect(refused[0].reason).toMatchObject({ code: 'CONFLICT', message: 'This plan was already decided or replaced.' });
		expect((await audits(p.id)).filter((x) => x === 'plan.approved')).toHaveLength(1);
		await waitUntil(async () => (await getPlan(sql(), p.id))!.status !== 'approved', 'the raced plan to end', { timeoutMs: 20_000 });
		expect(await planExecutions(p.id)).toBe(1);
	});

	it('an approval waiting on the sweep that expires it is refused as expired once the sweep commits', async () => {
		const plan = await propose(await newSession(admin.id, 'sweep first'), 'pct_start', 101);
		let release!: () => void;
		const held = new Promise<void>((r) => (release = r));
		let marked!: () => void;
		const swept = new Promise<void>((r) => (marked = r));
		const sweeping = sql().begin(async (tx) => {
			await tx`update plans set expires_at = now() - interval '1 second' where id = ${plan.id}`;
			const gone = await expireStalePlans(tx);
			marked();
			await held;
			return gone.map((p) => p.id);
		});
		await swept;
		const deciding = sql()
			.begin((tx) => operatorDecidesPlan(tx, plan.id, { decision: 'approved', operatorId: admin.id, credential: freshSession() }))
			.catch((x: unknown) => x);
		await waitForLockWaiter('%from plans where id = % for update%');
		release();
		expect(await sweeping).toContain(plan.id);
		expect(await deciding).toMatchObject({ message: PLAN_EXPIRED });
		expect(await getPlan(sql(), plan.id)).toMatchObject({ status: 'expired', decidedBy: null });
		expect(await audits(plan.id)).toEqual([]);
	});

	it("a crafted id: none such is refused; another operator's expired plan is refused before its expiry is told", async () => {
		await expect((await browser()).executions.decidePlan({ planId: crypto.randomUUID(), decision: 'approved' })).rejects.toMatchObject({
			code: 'CONFLICT'
		});
		const other = await createOperator(sql(), 'someone-else', 'correct horse battery', 'operator');
		const plan = await propose(await newSession(admin.id, 'not yours'), 'pct_start', 101);
		await sql()`update plans set expires_at = now() - interval '1 second' where id = ${plan.id}`;
		const e = await (await browser(other.id)).executions.decidePlan({ planId: plan.id, decision: 'approved' }).catch((x: unknown) => x);
		expect(e).toMatchObject({ code: expect.stringMatching(/^(NOT_FOUND|FORBIDDEN)$/) });
		expect((e as Error).message).not.toBe(PLAN_EXPIRED);
		expect((await getPlan(sql(), plan.id))!.status).toBe('proposed');
		expect(await audits(plan.id)).toEqual([]);
	});

	it('the sweep marks it expired on the event path; it stays refused; its agent is told once, and may propose again', async () => {
		const sessionId = await newSession(admin.id, 'swept');
		const plan = await propose(sessionId, 'pct_start', 101);
		const waiting = await propose(await newSession(admin.id, 'still waiting'), 'pct_start', 101);
		await sql()`update plans set expires_at = now() - interval '1 second' where id = ${plan.id}`;

		// (the expired plans the tests above left are swept with it)
		expect((await sweep(sql())).plansExpired).toBeGreaterThanOrEqual(1);
		expect(await getPlan(sql(), plan.id)).toMatchObject({ status: 'expired', error: 'approval expired: nobody decided in time' });
		expect((await getPlan(sql(), waiting.id))!.status).toBe('proposed');
		const events = await sql()<{ payload: Record<string, unknown> }[]>`
			select payload from events where type = 'plan.updated' and payload ->> 'planId' = ${plan.id} order by id`;
		expect(events.at(-1)!.payload).toMatchObject({ planId: plan.id, expired: true });
		expect((await sweep(sql())).plansExpired).toBe(0);

		await expect((await browser()).executions.decidePlan({ planId: plan.id, decision: 'approved' })).rejects.toMatchObject({
			code: 'CONFLICT',
			message: PLAN_EXPIRED
		});
		expect(await jobsOf('agent__continue_session', plan.id)).toBe(1);

		// No window is open (nobody approved anything): the agent reads it at the operator's next message, as an expired execution's note.
		expect(await continueSession(sessionId)).toBe('window-closed');
		expect(await continueSession(sessionId)).toBe('nothing');
		const notes = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'system' && JSON.stringify(m.parts).includes(plan.id));
		expect(notes).toHaveLength(1);
		const text = JSON.stringify(notes[0].parts);
		expect(text).toContain('expired: nobody approved it in time');
		expect(text).toContain('propose a new plan');
		expect(await planExecutions(plan.id)).toBe(0);
	});
});
