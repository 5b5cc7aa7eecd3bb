// What the screen counts and shows (issue #42, item 7), at the queries it reads: a proposed plan
// waits for approval (the task state, Ops's lists), a superseded one says so live, an old pending
// execution is still on Ops, and the "continues by itself" window ends with its plan.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { activeWindow, revokedSince } from '../../src/lib/server/db/queries/assent-windows';
import { listRecentExecutions } from '../../src/lib/server/db/queries/executions';
import { getPlan, insertPlan, listRecentPlans } from '../../src/lib/server/db/queries/plans';
import { countWaits } from '../../src/lib/server/db/queries/sessions';
import { operatorDecidesPlan } from '../../src/lib/server/executions/decisions';
import { advancePlan, stopPlan } from '../../src/lib/server/executions/plans';
import { prepareExecution } from '../../src/lib/server/executions/prepare';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, freshSession, newOperator, newSession, useHub } from '../helpers/executions';

useTestDatabase();
useHub();

let pve: ProxmoxDouble;
let operatorId: string;

beforeAll(async () => {
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'caddy', status: 'stopped' }] });
	await addHost(pve);
	operatorId = await newOperator();
});

afterAll(async () => {
	await pve?.close();
});

async function propose(sessionId: string, title: string) {
	const p = await prepareExecution({ target: 'strong/100', action: 'pct_start', params: {}, reason: 'start it' });
	if ('error' in p) throw new Error(p.error);
	return sql().begin((tx) => insertPlan(tx, sessionId, title, [{ ...p, why: 'start it' }]));
}

const eventsOf = (planId: string) => sql()<{ type: string }[]>`select type from events where payload ->> 'planId' = ${planId} order by id`;

describe('what waits for the operator', () => {
	it('a proposed plan counts as awaiting approval and is on Ops; superseding it is announced', async () => {
		const sessionId = await newSession(operatorId, 'plans wait');
		const first = await propose(sessionId, 'First');
		expect(await sql().begin((tx) => countWaits(tx, sessionId))).toEqual({ questions: 0, approvals: 1 });
		expect((await listRecentPlans(sql())).map((p) => p.id)).toContain(first.id);

		const second = await propose(sessionId, 'Second');
		expect((await getPlan(sql(), first.id))!.status).toBe('superseded');
		// One plan.updated when proposed, one when superseded: the card and Ops drop its Approve live.
		expect((await eventsOf(first.id)).map((e) => e.type)).toEqual(['plan.updated', 'plan.updated']);
		expect(await sql().begin((tx) => countWaits(tx, sessionId))).toEqual({ questions: 0, approvals: 1 });
		const listed = (await listRecentPlans(sql())).map((p) => p.id);
		expect(listed).toContain(second.id);
		expect(listed).not.toContain(first.id);
	});

	it('an execution awaiting approval is listed however many newer ones there are', async () => {
		const sessionId = await newSession(operatorId, 'old pending');
		const [old] = await sql()<{ id: string }[]>`
			insert into executions (requested_by_session, target, action, classification, hash, status, created_at, expires_at)
			values (${sessionId}, 'lxc:strong/100', 'pct_start', 'config_mutation', 'h-old', 'awaiting_approval', now() - interval '1 hour', now() + interval '1 hour')
			returning id`;
		await sql()`
			insert into executions (requested_by_session, target, action, classification, hash, status, error)
			select ${sessionId}, 'lxc:strong/100', 'pct_status', 'read_only', 'h-' || g, 'succeeded', null from generate_series(1, 3) g`;
		const listed = (await listRecentExecutions(sql(), 2)).map((e) => e.id);
		expect(listed).toHaveLength(3);
		expect(listed).toContain(old.id);
	});
});

describe('the "continues by itself" window', () => {
	it('ends with its plan, by expiry (the plan report still goes to the agent), and says so', async () => {
		const sessionId = await newSession(operatorId, 'window ends');
		const plan = await propose(sessionId, 'Start caddy');
		await sql().begin((tx) => operatorDecidesPlan(tx, plan.id, { decision: 'approved', operatorId, credential: freshSession() }));
		expect(await activeWindow(sql(), sessionId)).not.toBeNull();
		// Stopped before its step was made: the plan ends cancelled at the next advance.
		await sql().begin((tx) => stopPlan(tx, plan.id, operatorId));
		expect(await advancePlan(plan.id)).toBe('ended');
		expect((await getPlan(sql(), plan.id))!.status).toBe('cancelled');
		expect(await activeWindow(sql(), sessionId)).toBeNull();
		expect(await revokedSince(sql(), sessionId, plan.createdAt)).toBe(false);
		const [ev] = await sql()<
			{ payload: unknown }[]
		>`select payload from events where session_id = ${sessionId} and type = 'assent.updated' order by id desc limit 1`;
		expect(ev.payload).toEqual({ open: false, by: null });
	});

	it('stays open while something else the operator approved in that chat still runs', async () => {
		const sessionId = await newSession(operatorId, 'window stays');
		const plan = await propose(sessionId, 'Start caddy again');
		await sql().begin((tx) => operatorDecidesPlan(tx, plan.id, { decision: 'approved', operatorId, credential: freshSession() }));
		await sql()`
			insert into executions (requested_by_session, target, action, classification, hash, status)
			values (${sessionId}, 'lxc:strong/100', 'pct_stop', 'config_mutation', 'h-running', 'running')`;
		await sql().begin((tx) => stopPlan(tx, plan.id, operatorId));
		expect(await advancePlan(plan.id)).toBe('ended');
		expect(await activeWindow(sql(), sessionId)).not.toBeNull();
	});
});
