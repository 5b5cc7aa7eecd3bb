// Trust attacks against real Postgres and the SSH double: the yes/no trap, typed assent limited
// to what is on screen and named, destructive never by typing, the append-only audit trail,
// accounts (last admin, disabled sessions), login backoff and bounded argon2 work.
import type { RequestEvent } from '@sveltejs/kit';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import type { MessagePart } from '../../src/lib/server/db/schema';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listAudit } from '../../src/lib/server/db/queries/audit';
import { loginBlockedFor, recordLoginFailure } from '../../src/lib/server/db/queries/login-throttle';
import { adminSetDisabled, adminSetRole, createAuthSession, getOperatorBySessionToken } from '../../src/lib/server/db/queries/operators';
import { checkCredentials } from '../../src/lib/server/auth/accounts';
import { hashPassword, passwordWork, PasswordBusyError, verifyPassword } from '../../src/lib/server/auth/password';
import { requestExecution } from '../../src/lib/server/executions/request';
import { decideExecution } from '../../src/lib/server/executions/lifecycle';
import { executions__run } from '../../tasks/executions__run';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { raiseQuestion } from '../../src/lib/server/db/queries/questions';
import { answerFromPanel } from '../../src/lib/server/questions/answer';
import { chatRouter } from '../../src/lib/server/trpc/routers/chat';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { newSession, waitUntil } from '../helpers/executions';
import { openEventStream } from '../../src/lib/server/realtime/sse';
import { emitEventNow } from '../../src/lib/server/db/queries/events';
import { useStage } from '../helpers/stage';

const { hub: theHub, pve } = useStage({
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				// Stopped: a running one could not be approved at all (before-approval.test.ts), and these tests are about typing.
				{ vmid: 100, hostname: 'caddy', status: 'stopped' },
				{ vmid: 102, hostname: 'backup', status: 'stopped' },
				{ vmid: 103, hostname: 'media', status: 'stopped' }
			]
		}
	]
});
let admin: { id: string; username: string; role: 'admin' };

beforeAll(async () => {
	const [row] = await sql()<{ id: string }[]>`
		insert into operators (username, password_hash, role) values ('root-admin', ${await hashPassword('correct horse battery')}, 'admin') returning id`;
	admin = { id: row.id, username: 'root-admin', role: 'admin' };
});

const chat = () => createCallerFactory(chatRouter)({ user: admin, event: {} as RequestEvent });

/** An agent reply in `sessionId` whose tool calls requested these executions (as run-turn stores them). */
async function agentRequests(sessionId: string, requests: Array<Record<string, unknown>>): Promise<string[]> {
	const ids: string[] = [];
	const parts: MessagePart[] = [];
	for (const [i, input] of requests.entries()) {
		const r = await requestExecution(sessionId, input);
		if ('error' in r) throw new Error(r.error);
		ids.push(r.execution.id);
		parts.push({
			type: 'tool-request_execution',
			toolCallId: `c${i}`,
			input,
			state: 'output-available',
			output: { executionId: r.execution.id }
		} as MessagePart);
	}
	await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'assistant', parts, status: 'complete', origin: 'chat' }));
	return ids;
}

const statusOf = async (id: string) => (await getExecution(sql(), id))!.status;
const notes = async (sessionId: string) =>
	(
		await sql()<{ text: string }[]>`
		select p->'data'->>'text' as text from messages, jsonb_array_elements(parts) p
		where session_id = ${sessionId} and role = 'system' and p->'data'->>'kind' = 'assent' order by seq`
	).map((r) => r.text);

const destroy100 = { target: 'lxc:strong/100', action: 'pct_destroy', params: {}, reason: 'the page said so' };
const start102 = { target: 'lxc:strong/102', action: 'pct_start', params: {}, reason: 'start backup' };
const start103 = { target: 'lxc:strong/103', action: 'pct_start', params: {}, reason: 'start media' };

describe('typed assent', () => {
	it('the yes/no trap: a "yes" that answers a question approves nothing, not even what is on screen', async () => {
		const sessionId = await newSession(admin.id, 'injected');
		const [destroy, start] = await agentRequests(sessionId, [destroy100, start102]);
		const [m] = await sql()<{ id: string }[]>`select id from messages where session_id = ${sessionId} and role = 'assistant'`;
		await sql().begin((tx) =>
			raiseQuestion(tx, { sessionId, messageId: m.id, prompt: 'Shall I also check the logs afterwards?', options: ['yes', 'no'], contextEntities: [] })
		);
		await chat().send({ sessionId, text: 'yes', shownExecutionIds: [destroy, start] });
		expect(await statusOf(destroy)).toBe('awaiting_approval');
		expect(await statusOf(start)).toBe('awaiting_approval');
		const [q] = await sql()`select status, answer from session_questions where session_id = ${sessionId}`;
		expect(q).toMatchObject({ status: 'answered', answer: 'yes' });
		const [{ n }] = await sql()`select count(*)::int as n from approvals where execution_id = any(${[destroy, start]}::uuid[])`;
		expect(n).toBe(0);
	});

	it('a destructive execution is never approved by typing, even alone and named', async () => {
		const sessionId = await newSession(admin.id, 'destroy');
		const [destroy] = await agentRequests(sessionId, [destroy100]);
		await chat().send({ sessionId, text: 'yes', shownExecutionIds: [destroy] });
		await chat().send({ sessionId, text: 'yes, destroy 100', shownExecutionIds: [destroy] });
		expect(await statusOf(destroy)).toBe('awaiting_approval');
		expect((await notes(sessionId)).join(' ')).toContain('never approved by typing');
		expect((await notes(sessionId)).join(' ')).toContain('"Destroy CT 100"');
	});

	it('issue #43: "yes, resize 102" and "go ahead" never approve pct_resize (irreversible, not destructive); nothing reaches the host', async () => {
		const sessionId = await newSession(admin.id, 'resize');
		const [grow] = await agentRequests(sessionId, [{ target: 'lxc:strong/102', action: 'pct_resize', params: { size: '+1G' }, reason: 'disk full' }]);
		await chat().send({ sessionId, text: 'yes, resize 102', shownExecutionIds: [grow] });
		await chat().send({ sessionId, text: 'go ahead', shownExecutionIds: [grow] });
		expect(await statusOf(grow)).toBe('awaiting_approval');
		expect(await sql()`select 1 from approvals where execution_id = ${grow}`).toHaveLength(0);
		expect(await sql()`select 1 from graphile_worker._private_jobs where key = ${`execution:${grow}`}`).toHaveLength(0);
		expect((await notes(sessionId)).join(' ')).toContain('never approved by typing');
		const resizes = async () => (await pve.argvLog()).filter((a) => a[0] === 'pct' && a[1] === 'resize');
		expect(await resizes()).toEqual([]);
		// Approved by a click it runs, and the double records it: the checks above can fail.
		await sql().begin((tx) => decideExecution(tx, grow, { decision: 'approved', route: 'button', operatorId: admin.id, credential: 'session' }));
		await executions__run({ executionId: grow }, {} as never);
		expect(await resizes()).toEqual([['pct', 'resize', '102', 'rootfs', '+1G']]);
	});

	it('approves only what the client reported on screen, and only from the latest reply', async () => {
		const sessionId = await newSession(admin.id, 'screen');
		const [older] = await agentRequests(sessionId, [start103]);
		const [latest] = await agentRequests(sessionId, [start102]);
		// Not reported as shown: nothing.
		await chat().send({ sessionId, text: 'go ahead', shownExecutionIds: [] });
		expect(await statusOf(latest)).toBe('awaiting_approval');
		// The older one is shown but is not in the latest reply: still nothing for it.
		const { messageId } = await chat().send({ sessionId, text: 'go ahead', shownExecutionIds: [older, latest] });
		expect(await statusOf(older)).toBe('awaiting_approval');
		expect(await statusOf(latest)).toBe('approved');
		const [a] = await sql()`select route, message_id from approvals where execution_id = ${latest}`;
		expect(a).toEqual({ route: 'chat', message_id: messageId });
		const [audit] = await listAudit(sql(), { action: 'execution.approved', q: latest });
		expect(audit).toMatchObject({ route: 'chat', actorName: 'root-admin', subjectId: latest, detail: { messageId } });
		expect((await notes(sessionId)).at(-1)).toContain(`execution ${latest} (pct_start on lxc:strong/102)`);
	});

	it('with several candidates an unnamed yes approves nothing and the agent is told to ask which', async () => {
		const sessionId = await newSession(admin.id, 'ambiguous');
		const ids = await agentRequests(sessionId, [start102, start103]);
		await chat().send({ sessionId, text: 'yes', shownExecutionIds: ids });
		expect(await Promise.all(ids.map(statusOf))).toEqual(['awaiting_approval', 'awaiting_approval']);
		expect((await notes(sessionId)).at(-1)).toContain('Ask the operator which one they mean');
		// Naming one approves exactly that one.
		await chat().send({ sessionId, text: 'yes, start 103', shownExecutionIds: ids });
		expect(await Promise.all(ids.map(statusOf))).toEqual(['awaiting_approval', 'approved']);
	});
});

describe('audit trail', () => {
	it('refuses UPDATE, DELETE and TRUNCATE on the trail and on approvals', async () => {
		const [row] = await sql()`select id from audit_log limit 1`;
		expect(row).toBeDefined();
		await expect(sql()`update audit_log set action = 'nothing' where id = ${row.id}`).rejects.toThrow(/append-only/);
		await expect(sql()`delete from audit_log`).rejects.toThrow(/append-only/);
		await expect(sql()`truncate audit_log`).rejects.toThrow(/append-only/);
		await expect(sql()`delete from approvals`).rejects.toThrow(/append-only/);
		await expect(sql()`update approvals set decision = 'denied'`).rejects.toThrow(/append-only/);
	});

	it('what the operator answers the agent is on the trail: typed in the chat, or over the API with a token (route rest)', async () => {
		const sessionId = await newSession(admin.id, 'answers');
		const m = await sql().begin((tx) =>
			insertMessage(tx, { sessionId, role: 'assistant', parts: [{ type: 'text', text: 'A question follows.' }], status: 'complete', origin: 'chat' })
		);
		const ask = (prompt: string) =>
			sql().begin((tx) => raiseQuestion(tx, { sessionId, messageId: m.id, prompt, options: ['nightly', 'weekly'], contextEntities: [] }));
		const q1 = await ask('How often should backups run?');
		await chat().send({ sessionId, text: 'nightly', shownExecutionIds: [] });
		const q2 = await ask('And keep how many?');
		const r = await answerFromPanel(sessionId, q2.id, 'seven', admin, { id: '00000000-0000-4000-8000-0000000000aa', name: 'phone-shortcut' });
		expect(r.ok).toBe(true);
		const trail = (await listAudit(sql(), { action: 'question' })).filter((e) => e.sessionId === sessionId);
		expect(trail.map((e) => [e.action, e.route, e.subjectId, e.actorName, e.detail.answer])).toEqual([
			['question.answered', 'rest', q2.id, 'root-admin', 'seven'],
			['question.answered', 'chat', q1.id, 'root-admin', 'nightly']
		]);
		expect(trail[0].detail).toMatchObject({ prompt: 'And keep how many?', token: { name: 'phone-shortcut' } });
		expect(trail[1].detail.token).toBeUndefined();
	});

	it('an execution with a decision cannot be deleted out from under it', async () => {
		const [a] = await sql()`select execution_id from approvals limit 1`;
		await expect(sql()`delete from executions where id = ${a.execution_id}`).rejects.toThrow(/foreign key|append-only/);
	});
});

describe('accounts', () => {
	it('the last admin can be neither disabled nor demoted, even by two admins racing', async () => {
		const r1 = await adminSetDisabled(sql(), admin, admin.id, true);
		expect(r1).toMatchObject({ code: 'CONFLICT' });
		expect(await adminSetRole(sql(), admin, admin.id, 'operator')).toMatchObject({ code: 'CONFLICT' });
		// A second admin: now two concurrent demotions of each other leave exactly one admin.
		const [b] = await sql()<{ id: string }[]>`insert into operators (username, password_hash, role) values ('second-admin', 'x', 'admin') returning id`;
		const results = await Promise.all([adminSetRole(sql(), admin, b.id, 'operator'), adminSetRole(sql(), admin, admin.id, 'operator')]);
		expect(results.filter((r) => 'error' in r)).toHaveLength(1);
		const [{ n }] = await sql()`select count(*)::int as n from operators where role = 'admin' and disabled_at is null`;
		expect(n).toBe(1);
		// Put things back for the tests below.
		await sql()`update operators set role = 'admin' where id = ${admin.id}`;
	});

	it('disabling an operator ends their sessions at once, closes their live streams and refuses their password', async () => {
		const [op] = await sql()<{ id: string }[]>`
			insert into operators (username, password_hash, role) values ('bob', ${await hashPassword('bobs password!')}, 'operator') returning id`;
		const { token } = await createAuthSession(sql(), op.id, 1);
		const streams = ['bob', 'someone else'].map((who) => {
			const s = { ended: false, bytes: 0 };
			openEventStream({
				sql: sql(),
				hub: theHub(),
				after: theHub().lastId,
				scope: { operatorId: who === 'bob' ? op.id : admin.id, tokenHash: 'x' },
				sink: { write: (b) => void (s.bytes += b.length), backlog: () => 0, end: () => void (s.ended = true) }
			});
			return s;
		});
		await emitEventNow(sql(), { type: 'workers.changed', payload: {} });
		await waitUntil(async () => streams.every((s) => s.bytes > 20), 'both streams live');
		expect(await getOperatorBySessionToken(sql(), token)).toMatchObject({ username: 'bob' });
		expect(await adminSetDisabled(sql(), admin, op.id, true)).toMatchObject({ username: 'bob' });
		expect(await getOperatorBySessionToken(sql(), token)).toBeNull();
		await waitUntil(async () => streams[0].ended, "bob's stream closed");
		expect(streams[1].ended).toBe(false);
		expect(await checkCredentials(sql(), 'bob', 'bobs password!')).toBeNull();
		const [ev] = await sql()`select payload from events where type = 'auth.revoked' order by id desc limit 1`;
		expect(ev.payload).toMatchObject({ operatorId: op.id });
		const trail = await listAudit(sql(), { action: 'operator' });
		expect(trail.map((e) => e.action)).toContain('operator.disabled');
	});
});

describe('sign-in backoff', () => {
	it('blocks a username after 5 failures with growing waits, bounded by the maximum', async () => {
		const rules = [{ key: 'user:victim', threshold: 5 }];
		const waits: number[] = [];
		for (let i = 0; i < 12; i++) waits.push(await recordLoginFailure(sql(), rules, { maxSeconds: 20, windowSeconds: 900 }));
		expect(waits.slice(0, 4)).toEqual([0, 0, 0, 0]);
		expect(waits.slice(4, 8)).toEqual([1, 2, 4, 8]);
		expect(Math.max(...waits)).toBe(20);
		expect(await loginBlockedFor(sql(), ['user:victim', 'addr:1.2.3.4'])).toBeGreaterThan(0);
		expect(await loginBlockedFor(sql(), ['user:someone-else'])).toBe(0);
	});

	it('runs at most two argon2 checks at once and refuses the flood beyond the queue', async () => {
		const hash = await hashPassword('x');
		let peak = 0;
		const watch = setInterval(() => (peak = Math.max(peak, passwordWork().running)), 1);
		const results = await Promise.allSettled(Array.from({ length: 60 }, () => verifyPassword(hash, 'guess')));
		clearInterval(watch);
		expect(peak).toBeLessThanOrEqual(2);
		const busy = results.filter((r) => r.status === 'rejected' && r.reason instanceof PasswordBusyError).length;
		expect(busy).toBeGreaterThan(0);
		expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(32);
		expect(passwordWork()).toEqual({ running: 0, waiting: 0 });
	});
});
