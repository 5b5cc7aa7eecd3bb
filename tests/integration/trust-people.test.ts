// Issue #28, who may say "yes", against real Postgres and the SSH double: the audit route is the
// server's, tokens approve only what a person need not (and never their own request), an
// irreversible approval from a stale session asks for the password again, rules never cover
// what cannot be undone, a guesser cannot lock the admin out, a password change revokes the
// API tokens (and ends their streams), minting a token asks for the password, the REST answer
// is audited as `rest`.
import { sessionCaller, tokenCaller } from '../helpers/callers';
import type { RequestEvent } from '@sveltejs/kit';
import { isHttpError, isRedirect } from '@sveltejs/kit';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertApiToken, type ApiTokenAuth } from '../../src/lib/server/db/queries/api-tokens';
import { createAuthSession } from '../../src/lib/server/db/queries/operators';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { raiseQuestion } from '../../src/lib/server/db/queries/questions';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { insertPlan } from '../../src/lib/server/db/queries/plans';
import { createOperator } from '../../src/lib/server/auth/accounts';
import { authenticate } from '../../src/lib/server/auth/session';
import { prepareExecution } from '../../src/lib/server/executions/prepare';
import { requestExecution } from '../../src/lib/server/executions/request';
import { openEventStream } from '../../src/lib/server/realtime/sse';
import { ownerScope } from '../../src/lib/server/realtime/sse';
import { appRouter } from '../../src/lib/server/trpc/router';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { actions as loginActions } from '../../src/routes/login/+page.server';
import { POST as restAnswer } from '../../src/routes/sessions/[id]/questions/[qid]/answer/+server';
import { newSession, waitUntil } from '../helpers/executions';
import type { MessagePart } from '../../src/lib/types/messages';
import { useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const BASE = 'http://127.0.0.1:3000';
const PASSWORD = 'correct horse battery';
type Who = { id: string; username: string; role: 'admin' | 'operator' };
const { hub: theHub } = useStage({
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'stopped' },
				{ vmid: 101, hostname: 'db', status: 'running' }
			]
		}
	]
});
let admin: Who;

beforeAll(async () => {
	const op = await createOperator(sql(), 'root-admin', PASSWORD, 'admin');
	admin = { ...op, role: 'admin' };
});

/** A signed-in browser tab of `who`, its cookie session last verified `minutesAgo`, clicking on `page`. */
async function browser(who: Who, o: { minutesAgo?: number; page?: string; address?: string } = {}) {
	const { token } = await createAuthSession(sql(), who.id, 1);
	if (o.minutesAgo)
		await sql()`update auth_sessions set verified_at = now() - make_interval(mins => ${o.minutesAgo}) where operator_id = ${who.id} and created_at = (select max(created_at) from auth_sessions where operator_id = ${who.id})`;
	return { token, caller: await sessionCaller(token, o) };
}

const viaToken = (who: Who, token: ApiTokenAuth) => tokenCaller(who, token);

async function pending(input: Record<string, unknown>, sessionId?: string): Promise<string> {
	const r = await requestExecution(sessionId ?? (await newSession(admin.id)), { reason: 'test', params: {}, ...input });
	if ('error' in r) throw new Error(r.error);
	return r.execution.id;
}

const auditOf = async (action: string, subjectId: string) =>
	(
		await sql()<
			{ route: string; detail: Record<string, unknown> }[]
		>`select route, detail from audit_log where action = ${action} and subject_id = ${subjectId}`
	)[0];
const statusOf = async (id: string) => (await getExecution(sql(), id))!.status;

describe('approvals need a person', () => {
	it('the audit route is the server’s: a click from Ops is ops, from a chat card button — whatever the body claims', async () => {
		const fromOps = await browser(admin, { page: '/ops' });
		const a = await pending({ target: 'lxc:strong/101', action: 'restart' });
		await fromOps.caller.executions.decide({ executionId: a, decision: 'approved', route: 'button' } as { executionId: string; decision: 'approved' });
		expect((await auditOf('execution.approved', a)).route).toBe('ops');
		const fromChat = await browser(admin, { page: '/chat/abc' });
		const b = await pending({ target: 'lxc:strong/101', action: 'restart' });
		await fromChat.caller.executions.decide({ executionId: b, decision: 'approved', route: 'ops' } as { executionId: string; decision: 'approved' });
		expect((await auditOf('execution.approved', b)).route).toBe('button');
		const [approval] = await sql()`select route from approvals where execution_id = ${b}`;
		expect(approval.route).toBe('button');
	});

	it('an operate token denies but never approves, by click or by typing', async () => {
		const t = await insertApiToken(sql(), admin.id, { name: 'script', scope: 'operate', days: 7 });
		const api = viaToken(admin, { id: t.listing.id, name: 'script', scope: 'operate' });
		const sessionId = await newSession(admin.id);
		const input = { target: 'lxc:strong/101', action: 'restart', params: {}, reason: 'typed' };
		const id = await pending(input, sessionId);
		const claim = { executionId: id, decision: 'approved', route: 'ops' } as { executionId: string; decision: 'approved' };
		await expect(api.executions.decide(claim)).rejects.toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('scope operate') });
		const part = { type: 'tool-request_execution', toolCallId: 'c1', input, state: 'output-available', output: { executionId: id } } as MessagePart;
		await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'assistant', parts: [part], status: 'complete', origin: 'chat' }));
		await api.chat.send({ sessionId, text: 'yes', shownExecutionIds: [id] });
		expect(await statusOf(id)).toBe('awaiting_approval');
		expect(await api.executions.decide({ ...claim, decision: 'denied' } as never)).toMatchObject({ status: 'denied' });
		expect((await auditOf('execution.denied', id)).route).toBe('rest');
	});

	it('no token approves a plan with a destructive step; a rule can neither cover an irreversible action nor be made with a token', async () => {
		const t = await insertApiToken(sql(), admin.id, { name: 'approver', scope: 'approve', days: 7 });
		const api = viaToken(admin, { id: t.listing.id, name: 'approver', scope: 'approve' });
		const sessionId = await newSession(admin.id);
		const step = await prepareExecution({ target: 'lxc:strong/100', action: 'pct_destroy', params: {}, reason: 'gone' });
		if ('error' in step) throw new Error(step.error);
		const plan = await sql().begin((tx) => insertPlan(tx, sessionId, 'clean up', [{ ...step, why: 'x' }]));
		await expect(api.executions.decidePlan({ planId: plan.id, decision: 'approved' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		const [p] = await sql()`select status from plans where id = ${plan.id}`;
		expect(p.status).toBe('proposed');

		const { caller } = await browser(admin);
		await expect(caller.allowRules.create({ action: 'pct_resize', pattern: 'lxc:strong/*', constraints: [], note: '' })).rejects.toMatchObject({
			code: 'BAD_REQUEST',
			message: expect.stringContaining('cannot be undone')
		});
		await expect(caller.allowRules.create({ action: 'pct_destroy', pattern: 'lxc:strong/*', constraints: [], note: '' })).rejects.toMatchObject({
			code: 'BAD_REQUEST'
		});
		await expect(api.allowRules.create({ action: 'restart', pattern: 'lxc:strong/*', constraints: [], note: '' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		expect(await sql()`select 1 from allow_rules`).toHaveLength(0);
	});
});

describe('step-up for the irreversible', () => {
	it('a session that gave its password 11 min ago must give it again to destroy; then it may; the harmless needs no step-up', async () => {
		const stale = await browser(admin, { minutesAgo: 11 });
		const restart = await pending({ target: 'lxc:strong/101', action: 'restart' });
		expect(await stale.caller.executions.decide({ executionId: restart, decision: 'approved' })).toMatchObject({ status: 'approved' });

		const destroy = await pending({ target: 'lxc:strong/100', action: 'pct_destroy' });
		const refused = await stale.caller.executions.decide({ executionId: destroy, decision: 'approved' }).catch((e: unknown) => e);
		expect(refused).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('confirm your password') });
		// What the client reads to open the password dialog (t.ts puts it in the error's data).
		expect((refused as { cause?: { stepUp?: boolean } }).cause?.stepUp).toBe(true);
		// A grown disk never shrinks: the same rule.
		const grow = await pending({ target: 'lxc:strong/101', action: 'pct_resize', params: { size: '+1G' } });
		await expect(stale.caller.executions.decide({ executionId: grow, decision: 'approved' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		expect(await statusOf(destroy)).toBe('awaiting_approval');

		await expect(stale.caller.operators.confirmPassword({ password: 'not it' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
		await expect(stale.caller.executions.decide({ executionId: destroy, decision: 'approved' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		expect(await stale.caller.operators.confirmPassword({ password: PASSWORD })).toEqual({ ok: true });
		// The session read at the start of each request: a new request sees the fresh time.
		const again = await authenticate(`nomos_session=${stale.token}`);
		const fresh = createCallerFactory(appRouter)({
			user: again.user,
			apiToken: null,
			event: {
				url: new URL(`${BASE}/trpc/x`),
				request: new Request(`${BASE}/trpc/x`),
				locals: { sessionToken: stale.token, sessionVerifiedAt: again.sessionVerifiedAt }
			} as unknown as RequestEvent
		});
		expect(await fresh.executions.decide({ executionId: destroy, decision: 'approved' })).toMatchObject({ status: 'approved' });
		const trail = await sql()`select action from audit_log where action = 'operator.step_up' and actor_id = ${admin.id}`;
		expect(trail).toHaveLength(1);
	});

	it('approving a plan with a destructive step from a stale session asks for the password too', async () => {
		const stale = await browser(admin, { minutesAgo: 60 });
		const sessionId = await newSession(admin.id);
		const step = await prepareExecution({ target: 'lxc:strong/100', action: 'pct_destroy', params: {}, reason: 'gone' });
		if ('error' in step) throw new Error(step.error);
		const plan = await sql().begin((tx) => insertPlan(tx, sessionId, 'clean up', [{ ...step, why: 'x' }]));
		const e = await stale.caller.executions.decidePlan({ planId: plan.id, decision: 'approved' }).catch((x: unknown) => x);
		expect((e as { cause?: { stepUp?: boolean } }).cause?.stepUp).toBe(true);
	});
});

describe('sign-in throttling that cannot be turned against the victim', () => {
	const cookies = { set: () => undefined, delete: () => undefined, get: () => undefined, getAll: () => [], serialize: () => '' };
	let lastRetryAfter: string | undefined;
	const script = { accept: '*/*' }; // curl's, fetch's
	const json = { accept: 'application/json' };
	const enhanced = { accept: 'application/json', 'x-sveltekit-action': 'true' }; // use:enhance
	// A browser's form post by default.
	async function signIn(username: string, password: string, address: string, headers: Record<string, string> = { accept: 'text/html' }): Promise<number> {
		const body = new URLSearchParams({ username, password });
		lastRetryAfter = undefined;
		const event = {
			request: new Request(`${BASE}/login`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } }),
			url: new URL(`${BASE}/login`),
			cookies,
			getClientAddress: () => address,
			setHeaders: (h: Record<string, string>) => void (lastRetryAfter = h['retry-after'] ?? lastRetryAfter)
		};
		try {
			const r = (await loginActions.default(event as never)) as { status: number };
			return r.status;
		} catch (e) {
			if (isRedirect(e)) return e.status;
			// What SvelteKit sends a script as the response's status (an ActionFailure goes out as 200).
			if (isHttpError(e)) return e.status;
			throw e;
		}
	}

	it(
		'the lockout attack: six wrong passwords from one address do not keep the admin out from another',
		async () => {
			const who = await createOperator(sql(), 'victim', PASSWORD, 'admin');
			const statuses: number[] = [];
			for (let i = 0; i < 6; i++) statuses.push(await signIn('victim', `guess-${i}`, '203.0.113.5'));
			expect(statuses.slice(0, 4)).toEqual([400, 400, 400, 400]);
			expect(statuses.at(-1)).toBe(429);
			// The real admin, elsewhere: signed in (303), not "Too many failed sign-ins".
			expect(await signIn('victim', PASSWORD, '198.51.100.7')).toBe(303);
			// The guesser's own pair stays blocked, even with the right password.
			expect(await signIn('victim', PASSWORD, '203.0.113.5')).toBe(429);
			// A botnet: many addresses, a few guesses each (the count as the failures leave it). The
			// username only slows down (a bounded delay, unit-tested), it never refuses.
			await sql()`update login_throttle set failures = 400, last_failure_at = now() where key = 'user:victim'`;
			expect(await signIn('victim', PASSWORD, '192.0.2.99')).toBe(303);
			expect(who.username).toBe('victim');
		},
		scaled(30_000)
	);

	it('a script (no text/html in Accept) is refused with 401, then 429 with Retry-After; an enhanced form keeps fail()', async () => {
		await createOperator(sql(), 'scripted', PASSWORD, 'operator');
		const statuses: number[] = [];
		for (let i = 0; i < 5; i++) statuses.push(await signIn('scripted', `guess-${i}`, '203.0.113.77', script));
		expect(statuses).toEqual([401, 401, 401, 401, 429]);
		expect(Number(lastRetryAfter)).toBeGreaterThanOrEqual(1);
		expect(await signIn('scripted', PASSWORD, '203.0.113.77', json)).toBe(429);
		expect(await signIn('scripted', 'guess', '198.51.100.77', json)).toBe(401);
		// An enhanced form is the page's own: fail() (SvelteKit hands its data to the form).
		expect(await signIn('scripted', 'guess', '198.51.100.78', enhanced)).toBe(400);
		expect(await signIn('scripted', PASSWORD, '198.51.100.77', json)).toBe(303);
	});

	it('an address spraying many usernames is blocked; an IPv6 address counts by its /64', async () => {
		for (let i = 0; i < 20; i++) expect(await signIn(`user${i}`, 'guess', `2001:db8:1:2::${i + 1}`)).toBeGreaterThanOrEqual(400);
		expect(await signIn('root-admin', PASSWORD, '2001:db8:1:2:abcd::1')).toBe(429);
		expect(await signIn('root-admin', PASSWORD, '2001:db8:1:3::1')).toBe(303);
	});
});

describe('credentials die together', () => {
	it('changing one’s password revokes every API token and ends their streams; an admin’s reset does too', async () => {
		const bob = await createOperator(sql(), 'bob', PASSWORD, 'operator');
		const bobWho: Who = { ...bob, role: 'operator' };
		const t1 = await insertApiToken(sql(), bob.id, { name: 'ci', scope: 'operate', days: 30 });
		const t2 = await insertApiToken(sql(), bob.id, { name: 'mcp', scope: 'read', days: 30 });
		const theirs = await insertApiToken(sql(), admin.id, { name: 'admins', scope: 'read', days: 30 });
		const auth = await authenticate(null, `Bearer ${t2.token}`);
		expect(auth.user?.id).toBe(bob.id);
		const stream = { ended: false };
		openEventStream({
			sql: sql(),
			hub: theHub(),
			after: theHub().lastId,
			scope: ownerScope(auth),
			sink: { write: () => undefined, backlog: () => 0, end: () => void (stream.ended = true) }
		});

		const tab = await browser(bobWho);
		const changed = await tab.caller.operators.changePassword({ current: PASSWORD, next: 'a new long password' });
		expect((await authenticate(null, `Bearer ${t1.token}`)).user).toBeNull();
		expect((await authenticate(null, `Bearer ${t2.token}`)).user).toBeNull();
		expect(changed).toEqual({ ok: true, revokedTokens: 2 });
		await waitUntil(async () => stream.ended, 'the token’s stream ended');
		expect((await authenticate(null, `Bearer ${theirs.token}`)).user?.id).toBe(admin.id);
		// The tab that changed it stays signed in.
		expect((await authenticate(`nomos_session=${tab.token}`)).user?.id).toBe(bob.id);

		const t3 = await insertApiToken(sql(), bob.id, { name: 'again', scope: 'operate', days: 30 });
		const { caller } = await browser(admin);
		await caller.operators.resetPassword({ id: bob.id, password: 'reset by the admin' });
		expect((await authenticate(null, `Bearer ${t3.token}`)).user).toBeNull();
		const [reset] = await sql()`select detail from audit_log where action = 'operator.password_reset' order by id desc limit 1`;
		expect(reset.detail).toMatchObject({ revokedTokens: 1 });
	});

	it('minting a token asks for the password, and every token expires', async () => {
		const { caller } = await browser(admin, { minutesAgo: 1 });
		await expect(caller.apiTokens.create({ name: 'x', scope: 'read', expiresInDays: '30', password: 'wrong password' })).rejects.toMatchObject({
			code: 'BAD_REQUEST'
		});
		await expect(caller.apiTokens.create({ name: 'x', scope: 'read', expiresInDays: 'none', password: PASSWORD } as never)).rejects.toMatchObject({
			code: 'BAD_REQUEST'
		});
		await expect(caller.apiTokens.create({ name: 'x', scope: 'read', expiresInDays: '30' } as never)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
		const r = await caller.apiTokens.create({ name: 'x', scope: 'approve', expiresInDays: '365', password: PASSWORD });
		expect(r.listing.expiresAt).not.toBeNull();
		expect(Date.parse(r.listing.expiresAt!) - Date.now()).toBeLessThanOrEqual(365 * 86_400_000);
		expect((await caller.apiTokens.list()).filter((t) => t.name === 'x')).toHaveLength(1);
	});
});

describe('the REST answer endpoint', () => {
	it('is recorded and audited as route rest; the panel as panel', async () => {
		const sessionId = await newSession(admin.id);
		const m = await sql().begin((tx) =>
			insertMessage(tx, { sessionId, role: 'assistant', parts: [{ type: 'text', text: 'Q' }], status: 'complete', origin: 'chat' })
		);
		const q = await sql().begin((tx) => raiseQuestion(tx, { sessionId, messageId: m.id, prompt: 'How often?', options: [], contextEntities: [] }));
		const t = await insertApiToken(sql(), admin.id, { name: 'phone', scope: 'operate', days: 7 });
		const request = new Request(`${BASE}/sessions/${sessionId}/questions/${q.id}/answer`, { method: 'POST', body: JSON.stringify({ answer: 'nightly' }) });
		const res = await restAnswer({
			request,
			params: { id: sessionId, qid: q.id },
			locals: { user: admin, apiToken: { id: t.listing.id, name: 'phone', scope: 'operate' } }
		} as never);
		expect(res.status).toBe(202);
		expect(await auditOf('question.answered', q.id)).toMatchObject({ route: 'rest', detail: { answer: 'nightly', token: { name: 'phone' } } });
		// The question itself and its event say so too: `rest`, not `panel`.
		const [row] = await sql()`select answered_via from session_questions where id = ${q.id}`;
		expect(row.answered_via).toBe('rest');
		const [event] = await sql()`select payload from events where type = 'question.answered' and payload->>'questionId' = ${q.id}`;
		expect(event.payload).toMatchObject({ via: 'rest' });
		// The panel in a signed-in browser (tRPC, no token) stays `panel`.
		const q2 = await sql().begin((tx) => raiseQuestion(tx, { sessionId, messageId: m.id, prompt: 'Keep how many?', options: [], contextEntities: [] }));
		const { caller } = await browser(admin);
		await caller.questions.answer({ sessionId, questionId: q2.id, answer: 'seven' });
		const [panel] = await sql()`select answered_via from session_questions where id = ${q2.id}`;
		expect(panel.answered_via).toBe('panel');
		expect((await auditOf('question.answered', q2.id)).route).toBe('panel');
	});
});
