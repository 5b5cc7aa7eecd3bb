// Sessions belong to their operator (issue #43 item 3), across two accounts against real Postgres
// and the SSH double: operator B reaches none of operator A's session through any procedure, page
// load, export, answer route or event stream; shared read-only, B reads it and changes nothing;
// an admin reads it (read-only) and sees alert sessions of the hook's maker.
import type { RequestEvent } from '@sveltejs/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import type { MessagePart } from '../../src/lib/server/db/schema';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { raiseQuestion } from '../../src/lib/server/db/queries/questions';
import { createSession, getSession } from '../../src/lib/server/db/queries/sessions';
import { requestExecution } from '../../src/lib/server/executions/request';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { NOT_YOURS, READ_ONLY } from '../../src/lib/server/access/sessions';
import { openEventStream, ownerScope } from '../../src/lib/server/realtime/sse';
import { appRouter } from '../../src/lib/server/trpc/router';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import type { Operator } from '../../src/lib/server/db/queries/operators';
import { GET as exportRoute } from '../../src/routes/api/sessions/[id]/export/+server';
import { GET as sessionStreamRoute } from '../../src/routes/api/sessions/[id]/events/+server';
import { POST as answerRoute } from '../../src/routes/sessions/[id]/questions/[qid]/answer/+server';
import { load as chatPageLoad } from '../../src/routes/(app)/chat/[sessionId]/+page.server';
import { load as layoutLoad } from '../../src/routes/(app)/+layout.server';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, useHub, waitUntil } from '../helpers/executions';

useTestDatabase();
const theHub = useHub();

let pve: ProxmoxDouble;
let a: Operator;
let b: Operator;
let admin: Operator;
/** A's session: a message with a unique word, a pending execution, a plan-free open question. */
let s: { id: string; executionId: string; questionId: string };

async function operator(username: string, role: 'operator' | 'admin'): Promise<Operator> {
	const [row] = await sql()<
		{ id: string }[]
	>`insert into operators (username, password_hash, role) values (${username}, 'not-a-real-hash', ${role}) returning id`;
	return { id: row.id, username, role };
}

const caller = (user: Operator) => createCallerFactory(appRouter)({ user, event: { url: new URL('http://nomos.test/chat') } as RequestEvent });

beforeAll(async () => {
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 102, hostname: 'backup', status: 'stopped' }] });
	await addHost(pve);
	await syncAllHosts();
	[a, b, admin] = [await operator('alice', 'operator'), await operator('bob', 'operator'), await operator('root', 'admin')];
	const id = await sql().begin((tx) => createSession(tx, a.id, 'alice private chat'));
	await sql().begin((tx) =>
		insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text: 'the zanzibarwidget backup' }], status: 'complete', origin: 'chat' })
	);
	const r = await requestExecution(id, { target: 'lxc:strong/102', action: 'pct_start', params: {}, reason: 'start backup' });
	if ('error' in r) throw new Error(r.error);
	const parts = [
		{ type: 'tool-request_execution', toolCallId: 'c0', input: {}, state: 'output-available', output: { executionId: r.execution.id } } as MessagePart
	];
	const m = await sql().begin((tx) => insertMessage(tx, { sessionId: id, role: 'assistant', parts, status: 'complete', origin: 'chat' }));
	const q = await sql().begin((tx) => raiseQuestion(tx, { sessionId: id, messageId: m.id, prompt: 'Which backup?', options: ['a', 'b'], contextEntities: [] }));
	s = { id, executionId: r.execution.id, questionId: q.id };
});

afterAll(async () => {
	await pve?.close();
});

/** What a call answered: ok, or the tRPC error code and message. */
async function outcome(p: Promise<unknown>): Promise<{ ok: true } | { code: string; message: string }> {
	try {
		await p;
		return { ok: true };
	} catch (e) {
		const err = e as { code?: string; message: string };
		return { code: err.code ?? 'THROWN', message: err.message };
	}
}

/** A SvelteKit `error()` or `Response` status from a route or load; 200 when it returned normally. */
async function status(p: unknown): Promise<number> {
	try {
		const r = await p;
		return r instanceof Response ? r.status : 200;
	} catch (e) {
		return (e as { status?: number }).status ?? 500;
	}
}

/** Every procedure that names a session (or what it asked for), as operator `user` calls it. */
const procedures = (user: Operator) => {
	const c = caller(user);
	return {
		'chat.messages': () => c.chat.messages({ sessionId: s.id }),
		'chat.send': () => c.chat.send({ sessionId: s.id, text: 'hello from someone', shownExecutionIds: [s.executionId] }),
		'chat.stop': () => c.chat.stop({ sessionId: s.id }),
		'chat.rename': () => c.chat.rename({ sessionId: s.id, title: 'taken over' }),
		'chat.pin': () => c.chat.pin({ sessionId: s.id, pinned: true }),
		'chat.archive': () => c.chat.archive({ sessionId: s.id, archived: true }),
		'chat.setModel': () => c.chat.setModel({ sessionId: s.id, model: null }),
		'chat.share': () => c.chat.share({ sessionId: s.id, shared: 'write' }),
		'chat.delete': () => c.chat.delete({ sessionId: s.id }),
		'questions.ofSession': () => c.questions.ofSession({ sessionId: s.id }),
		'questions.answer': () => c.questions.answer({ sessionId: s.id, questionId: s.questionId, answer: 'a' }),
		'executions.window': () => c.executions.window({ sessionId: s.id }),
		'executions.revokeWindow': () => c.executions.revokeWindow({ sessionId: s.id }),
		'executions.decide': () => c.executions.decide({ executionId: s.executionId, decision: 'denied' }),
		'executions.editForm': () => c.executions.editForm({ executionId: s.executionId }),
		'executions.cancel': () => c.executions.cancel({ executionId: s.executionId })
	};
};
type Name = keyof ReturnType<typeof procedures>;
const names = Object.keys(procedures(null as unknown as Operator)) as Name[];
const reads: Name[] = ['chat.messages', 'questions.ofSession', 'executions.window'];

/** A's session is untouched: title, owner, sharing, its question open, its execution pending, no message of B's. */
async function untouched() {
	expect(await getSession(sql(), s.id)).toMatchObject({ title: 'alice private chat', ownerId: a.id, pinned: false, archived: false, deletedAt: null });
	const [row] = await sql()`
		select (select status from session_questions where id = ${s.questionId}) as q, (select status from executions where id = ${s.executionId}) as e,
			(select count(*)::int from messages where session_id = ${s.id} and role = 'user') as users`;
	expect(row).toEqual({ q: 'open', e: 'awaiting_approval', users: 1 });
}

/** A fleet and a session stream as `user` opens them (the scope the routes build); their text so far. */
function streams(user: Operator) {
	const out = { fleet: '', session: '' };
	const scope = ownerScope({ user, sessionToken: 'token-of-' + user.username });
	for (const k of ['fleet', 'session'] as const)
		openEventStream({
			sql: sql(),
			hub: theHub(),
			after: theHub().lastId,
			scope: k === 'session' ? { ...scope, sessionId: s.id } : scope,
			sink: { write: (bytes) => void (out[k] += new TextDecoder().decode(bytes)), backlog: () => 0, end: () => undefined }
		});
	return out;
}

describe('operator B and operator A’s session', () => {
	it.each(names)('%s: B is answered "no such chat", and nothing changes', async (name) => {
		const r = await outcome(procedures(b)[name]());
		expect(r).toEqual({ code: 'NOT_FOUND', message: name === 'questions.answer' ? 'No such question.' : NOT_YOURS });
		await untouched();
	});

	it('lists and search: A sees the session and finds its words; B neither', async () => {
		expect((await caller(a).chat.sessions()).map((x) => x.id)).toContain(s.id);
		expect((await caller(a).chat.search({ q: 'zanzibarwidget' })).map((h) => h.sessionId)).toEqual([s.id]);
		expect((await caller(b).chat.sessions()).map((x) => x.id)).not.toContain(s.id);
		expect(await caller(b).chat.search({ q: 'zanzibarwidget' })).toEqual([]);
		expect((await caller(b).questions.open()).map((q) => q.sessionId)).not.toContain(s.id);
		expect((await caller(b).executions.recent()).map((e) => e.id)).not.toContain(s.executionId);
		expect((await caller(a).executions.recent()).map((e) => e.id)).toContain(s.executionId);
	});

	it('pages, export, the answer route and the session stream route: 404 for B, 200 for A', async () => {
		const ev = (user: Operator, extra: Record<string, unknown>) => ({ locals: { user, sessionToken: null }, ...extra }) as never;
		const url = new URL(`http://nomos.test/api/sessions/${s.id}/export?format=md`);
		expect(await status(exportRoute(ev(b, { params: { id: s.id }, url })))).toBe(404);
		expect(await status(exportRoute(ev(a, { params: { id: s.id }, url })))).toBe(200);
		expect(await status(chatPageLoad(ev(b, { params: { sessionId: s.id } })))).toBe(404);
		expect(await status(chatPageLoad(ev(a, { params: { sessionId: s.id } })))).toBe(200);
		const layout = (await layoutLoad(ev(b, {}))) as { sessions: Array<{ id: string }> };
		expect(layout.sessions.map((x) => x.id)).not.toContain(s.id);
		const ctrl = new AbortController();
		const streamReq = (user: Operator) =>
			sessionStreamRoute(
				ev(user, { params: { id: s.id }, url: new URL('http://nomos.test/'), request: new Request('http://nomos.test/', { signal: ctrl.signal }) })
			);
		expect(await status(streamReq(b))).toBe(404);
		expect(await status(streamReq(a))).toBe(200);
		ctrl.abort();
		const answer = new Request('http://nomos.test/', { method: 'POST', body: JSON.stringify({ answer: 'a' }) });
		expect(await status(answerRoute(ev(b, { params: { id: s.id, qid: s.questionId }, request: answer })))).toBe(404);
		await untouched();
	});

	it('event streams: B’s fleet and session streams carry none of A’s session events; A’s do', async () => {
		const [ofA, ofB] = [streams(a), streams(b)];
		await caller(a).chat.pin({ sessionId: s.id, pinned: true });
		await caller(a).chat.pin({ sessionId: s.id, pinned: false });
		await waitUntil(
			async () => (ofA.fleet.match(/session\.updated/g) ?? []).length >= 2 && ofA.session.includes('session.updated'),
			'A’s streams to carry the pins'
		);
		// The hub has dispatched both events to every stream by now (A's got them); B's got none.
		await new Promise((r) => setTimeout(r, 200));
		expect(ofB.fleet).not.toContain(s.id);
		expect(ofB.session).not.toContain('session.updated');
		expect(ofA.fleet).toContain(s.id);
	});
});

describe('sharing', () => {
	it('read-only: B lists, reads and exports it, and can change nothing in it; unshared, B is out again', async () => {
		await caller(a).chat.share({ sessionId: s.id, shared: 'read' });
		const bStreams = streams(b);
		expect((await caller(b).chat.sessions()).find((x) => x.id === s.id)).toMatchObject({ owner: 'alice', shared: 'read' });
		expect(await caller(b).chat.messages({ sessionId: s.id })).toMatchObject({ access: 'read', session: { owner: 'alice' } });
		for (const name of reads) expect(await outcome(procedures(b)[name]())).toEqual({ ok: true });
		for (const name of names.filter((n) => !reads.includes(n))) {
			const r = await outcome(procedures(b)[name]());
			expect(r, name).toEqual({ code: 'FORBIDDEN', message: READ_ONLY });
		}
		await untouched();
		// A's next change reaches B's streams now.
		await caller(a).chat.rename({ sessionId: s.id, title: 'alice private chat' });
		await waitUntil(async () => bStreams.fleet.includes(s.id) && bStreams.session.includes('session.updated'), 'B’s streams to carry the rename');

		await caller(a).chat.share({ sessionId: s.id, shared: null });
		expect(await outcome(caller(b).chat.messages({ sessionId: s.id }))).toEqual({ code: 'NOT_FOUND', message: NOT_YOURS });
	});

	it('read-write lets B rename it but not share it further; an admin reads every session read-only', async () => {
		expect(await caller(admin).chat.messages({ sessionId: s.id })).toMatchObject({ access: 'read' });
		expect(await outcome(caller(admin).chat.rename({ sessionId: s.id, title: 'admin was here' }))).toEqual({ code: 'FORBIDDEN', message: READ_ONLY });
		await caller(a).chat.share({ sessionId: s.id, shared: 'write' });
		await caller(b).chat.rename({ sessionId: s.id, title: 'renamed by bob' });
		expect((await getSession(sql(), s.id))?.title).toBe('renamed by bob');
		expect(await outcome(caller(b).chat.share({ sessionId: s.id, shared: 'read' }))).toEqual({
			code: 'FORBIDDEN',
			message: 'Only the owner of a chat shares it.'
		});
		await caller(a).chat.share({ sessionId: s.id, shared: null });
	});
});

describe('alert and schedule sessions', () => {
	it('belong to the hook’s maker, and admins see them listed', async () => {
		const [hook] = await sql()<{ id: string }[]>`
			insert into alert_hooks (name, kind, secret_hash, created_by) values ('grafana', 'grafana', 'x', ${a.id}) returning id`;
		const id = await sql().begin((tx) => createSession(tx, null, 'Disk full', { startedByHook: hook.id }));
		expect((await getSession(sql(), id))?.ownerId).toBe(a.id);
		expect((await caller(a).chat.sessions()).map((x) => x.id)).toContain(id);
		expect((await caller(admin).chat.sessions()).find((x) => x.id === id)).toMatchObject({ owner: 'alice' });
		expect((await caller(b).chat.sessions()).map((x) => x.id)).not.toContain(id);
	});
});
