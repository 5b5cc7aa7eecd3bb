// Issue #43 item 1: one definition of what needs a person. Every mutation of the catalogue goes
// through every way an approval arrives (a click with a fresh or a stale session, tRPC/REST with
// an approve token, a token on what its own messages caused — an MCP request or a turn its chat
// started —, typing with a session and with a token, an always-allow rule, a plan approved by a
// token and by a stale session), and each outcome must be what needsPerson() says: approved
// when no person is needed, refused when one is (a fresh session's click always approves).
import { sessionCaller, tokenCaller } from '../helpers/callers';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertApiToken, type ApiTokenAuth } from '../../src/lib/server/db/queries/api-tokens';
import { createAuthSession } from '../../src/lib/server/db/queries/operators';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { insertExecution } from '../../src/lib/server/db/queries/executions';
import { insertPlan } from '../../src/lib/server/db/queries/plans';
import { createOperator } from '../../src/lib/server/auth/accounts';
import { matchingRule } from '../../src/lib/server/executions/allow-rules';
import { ACTIONS, ACTION_NAMES, needsPerson, sha256, type ActionName } from '../../src/lib/server/proxmox/actions';
import type { PreparedExecution } from '../../src/lib/server/executions/prepare';
import { newSession } from '../helpers/executions';
import type { MessagePart } from '../../src/lib/types/messages';
import { useStage } from '../helpers/stage';

type Who = { id: string; username: string; role: 'admin' | 'operator' };
useStage({ sync: false, hosts: [{ nodeName: 'strong', seed: [{ vmid: 101, hostname: 'db', status: 'running' }] }] });
let admin: Who;
let token: ApiTokenAuth;

beforeAll(async () => {
	const op = await createOperator(sql(), 'table-admin', 'correct horse battery', 'admin');
	admin = { ...op, role: 'admin' };
	const t = await insertApiToken(sql(), admin.id, { name: 'approver', scope: 'approve', days: 7 });
	token = { id: t.listing.id, name: 'approver', scope: 'approve' };
});

async function browser(minutesAgo = 0) {
	const { token: cookie } = await createAuthSession(sql(), admin.id, 1);
	if (minutesAgo)
		await sql()`update auth_sessions set verified_at = now() - make_interval(mins => ${minutesAgo}) where operator_id = ${admin.id} and created_at = (select max(created_at) from auth_sessions where operator_id = ${admin.id})`;
	return sessionCaller(cookie);
}
const viaToken = () => tokenCaller(admin, token);

const MUTATIONS = ACTION_NAMES.filter((a) => ACTIONS[a].classification !== 'read_only');

/** A stored request of `action` as the catalogue would make it (its params are not what is checked here). */
function prepared(action: ActionName): PreparedExecution {
	const onHost = ACTIONS[action].scope === 'host';
	const target = onHost ? 'host:strong' : 'lxc:strong/101';
	return {
		hostName: 'strong',
		target,
		vmid: onHost ? undefined : '101',
		action,
		params: onHost ? { vmid: '150' } : {},
		classification: ACTIONS[action].classification,
		hash: sha256(`${action}/${target}/${crypto.randomUUID()}`),
		commandPreview: `${action} …`,
		reason: 'table'
	} as unknown as PreparedExecution;
}

/** A pending execution of `action` in a fresh chat, on the operator's screen as the agent's latest request. */
async function pending(action: ActionName, o: { tokenId?: string } = {}): Promise<{ id: string; sessionId: string }> {
	const sessionId = await newSession(admin.id);
	const e = await sql().begin((tx) =>
		insertExecution(tx, prepared(action), { sessionId, status: 'awaiting_approval', ttlHours: 1, tokenId: o.tokenId ?? null })
	);
	const part = {
		type: 'tool-request_execution',
		toolCallId: 'c1',
		input: { action, target: e.target, params: {}, reason: 'table' },
		state: 'output-available',
		output: { executionId: e.id }
	} as MessagePart;
	await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'assistant', parts: [part], status: 'complete', origin: 'chat' }));
	return { id: e.id, sessionId };
}

const statusOf = async (id: string) => (await sql()<{ status: string }[]>`select status from executions where id = ${id}`)[0].status;
const outcome = (p: Promise<unknown>) =>
	p.then(
		() => 'approved',
		(e: { code?: string }) => `refused:${e.code ?? 'error'}`
	);

type Route = (a: ActionName) => Promise<boolean>;

const ROUTES: Record<string, Route> = {
	'click, stale session (11 min)': async (a) => {
		const { id } = await pending(a);
		await outcome((await browser(11)).executions.decide({ executionId: id, decision: 'approved' }));
		return (await statusOf(id)) === 'approved';
	},
	'REST/tRPC with an approve token': async (a) => {
		const { id } = await pending(a);
		await outcome(viaToken().executions.decide({ executionId: id, decision: 'approved' }));
		return (await statusOf(id)) === 'approved';
	},
	'typed "go ahead", fresh session': async (a) => {
		const { id, sessionId } = await pending(a);
		await (await browser()).chat.send({ sessionId, text: 'go ahead', shownExecutionIds: [id] });
		return (await statusOf(id)) === 'approved';
	},
	'typed "yes" with an approve token': async (a) => {
		const { id, sessionId } = await pending(a);
		await viaToken().chat.send({ sessionId, text: 'yes', shownExecutionIds: [id] });
		return (await statusOf(id)) === 'approved';
	},
	'always-allow rule': async (a) => {
		const pattern = ACTIONS[a].scope === 'host' ? 'host:strong' : 'lxc:strong/101';
		const made = await outcome((await browser()).allowRules.create({ action: a, pattern, constraints: [], note: '' }));
		const rule = await sql().begin((tx) => matchingRule(tx, prepared(a)));
		await sql()`update allow_rules set revoked_at = now() where revoked_at is null`;
		if ((made === 'approved') !== !!rule) throw new Error(`${a}: a rule was ${made} but matching found ${rule ? 'one' : 'none'}`);
		return !!rule;
	},
	'plan approved with an approve token': async (a) => {
		const sessionId = await newSession(admin.id);
		const plan = await sql().begin((tx) => insertPlan(tx, sessionId, `plan of ${a}`, [{ ...prepared(a), why: 'table' }]));
		await outcome(viaToken().executions.decidePlan({ planId: plan.id, decision: 'approved' }));
		return ((await sql()`select status from plans where id = ${plan.id}`)[0].status as string) === 'approved';
	},
	'plan approved by a stale session': async (a) => {
		const sessionId = await newSession(admin.id);
		const plan = await sql().begin((tx) => insertPlan(tx, sessionId, `plan of ${a}`, [{ ...prepared(a), why: 'table' }]));
		await outcome((await browser(11)).executions.decidePlan({ planId: plan.id, decision: 'approved' }));
		return ((await sql()`select status from plans where id = ${plan.id}`)[0].status as string) === 'approved';
	}
};

describe('who may approve what: every action through every route, against needsPerson()', () => {
	it('the catalogue has mutations that need a person and ones that do not (the table below means something)', () => {
		expect(MUTATIONS.filter((a) => needsPerson(a)).length).toBeGreaterThan(3);
		expect(MUTATIONS.filter((a) => !needsPerson(a)).length).toBeGreaterThan(3);
		// Irreversible actions that are not "destructive" are the ones two notions of danger disagreed on.
		expect(MUTATIONS.filter((a) => needsPerson(a) && ACTIONS[a].classification !== 'destructive')).toEqual(expect.arrayContaining(['pct_resize', 'vm_resize']));
	});

	for (const [route, run] of Object.entries(ROUTES)) {
		it(`${route}: approves exactly what needs no person`, async () => {
			const got: Record<string, boolean> = {};
			const want: Record<string, boolean> = {};
			for (const a of MUTATIONS) {
				got[a] = await run(a);
				want[a] = !needsPerson(a);
			}
			expect(got).toEqual(want);
		});
	}

	it('a fresh browser session’s click approves everything; a token never approves what its own messages caused', async () => {
		const got: Record<string, [string, string]> = {};
		for (const a of MUTATIONS) {
			const mine = await pending(a, { tokenId: token.id });
			await outcome(viaToken().executions.decide({ executionId: mine.id, decision: 'approved' }));
			const fresh = await pending(a);
			await outcome((await browser()).executions.decide({ executionId: fresh.id, decision: 'approved' }));
			got[a] = [await statusOf(mine.id), await statusOf(fresh.id)];
		}
		expect(got).toEqual(Object.fromEntries(MUTATIONS.map((a) => [a, ['awaiting_approval', 'approved']])));
	});
});
