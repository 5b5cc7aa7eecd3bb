// Personal access tokens against real Postgres: stored hashed, expiring, revocable, scoped; the
// request guard (hooks.server.ts) lets a bearer request without Origin through, refuses a cookie
// request without it, answers 401 without credentials and 403 to a read token's mutation; the
// node SSE fast path takes the token and a revocation ends its stream; approvals made with a
// token name it in the audit trail.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestEvent } from '@sveltejs/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertApiToken } from '../../src/lib/server/db/queries/api-tokens';
import { emitEventNow } from '../../src/lib/server/db/queries/events';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { createAuthSession } from '../../src/lib/server/db/queries/operators';
import { authenticate } from '../../src/lib/server/auth/session';
import { guardRequest, READ_ONLY_TOKEN } from '../../src/lib/server/auth/request-guard';
import { createOperator } from '../../src/lib/server/auth/accounts';
import { requestExecution } from '../../src/lib/server/executions/request';
import { serveNodeSse } from '../../src/lib/server/realtime/node-sse';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { appRouter } from '../../src/lib/server/trpc/router';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import type { ApiTokenAuth } from '../../src/lib/server/db/queries/api-tokens';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, newSession, useHub } from '../helpers/executions';
import { readSse } from '../helpers/sse-client';
import type { MessagePart } from '../../src/lib/types/messages';

useTestDatabase();
useHub();

const BASE = 'http://127.0.0.1:3000';
type Who = { id: string; username: string; role: 'admin' | 'operator' };
let alice: Who;
let cookie: string;
let pve: ProxmoxDouble;

const caller = (user: Who, apiToken: ApiTokenAuth | null) =>
	createCallerFactory(appRouter)({ user, apiToken, event: { locals: { sessionToken: null } } as unknown as RequestEvent });

async function tokenFor(user: Who, scope: 'read' | 'operate' | 'approve', days: number | null = 30) {
	return insertApiToken(sql(), user.id, { name: `${scope}-token`, scope, days });
}

function req(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
	return new Request(BASE + path, { method: init.method ?? 'GET', headers: init.headers, body: init.body });
}

beforeAll(async () => {
	const op = await createOperator(sql(), 'alice', 'a-long-enough-password', 'admin');
	alice = { id: op.id, username: 'alice', role: 'admin' };
	cookie = `nomos_session=${(await createAuthSession(sql(), op.id, 1)).token}`;
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'caddy', status: 'stopped' }] });
	await addHost(pve);
	await syncAllHosts();
});

afterAll(async () => {
	await pve?.close();
});

describe('API tokens', () => {
	it('stores only the sha256 of a prefixed high-entropy token and resolves it to its operator', async () => {
		const { token, listing } = await tokenFor(alice, 'read');
		expect(token).toMatch(/^nomos_pat_[A-Za-z0-9_-]{43}$/);
		expect(listing.hint).toBe(token.slice(0, 14));
		const rows = await sql()<{ tokenHash: string }[]>`select token_hash as "tokenHash" from api_tokens`;
		expect(rows.some((r) => r.tokenHash.includes(token) || token.includes(r.tokenHash))).toBe(false);
		const text = JSON.stringify(await sql()`select * from api_tokens`);
		expect(text).not.toContain(token.slice(10));

		const auth = await authenticate(null, `Bearer ${token}`);
		expect(auth).toMatchObject({ user: { id: alice.id, role: 'admin' }, sessionToken: null, apiToken: { id: listing.id, scope: 'read' } });
		const [used] = await sql()<{ lastUsedAt: string | null }[]>`select last_used_at as "lastUsedAt" from api_tokens where id = ${listing.id}`;
		expect(used.lastUsedAt).not.toBeNull();
		// Not a token: a wrong one, another scheme, a session token presented as bearer.
		expect((await authenticate(null, `Bearer ${token}x`)).user).toBeNull();
		expect((await authenticate(null, `Basic ${token}`)).user).toBeNull();
		expect((await authenticate(null, `Bearer ${cookie.split('=')[1]}`)).user).toBeNull();
	});

	it('an expired token, a revoked one and a disabled operator’s are refused', async () => {
		const bob = await createOperator(sql(), 'bob', 'a-long-enough-password', 'operator');
		const bobWho: Who = { id: bob.id, username: 'bob', role: 'operator' };
		const old = await tokenFor(bobWho, 'operate', 7);
		const revoked = await tokenFor(bobWho, 'operate', null);
		const live = await tokenFor(bobWho, 'operate', 90);
		await sql()`update api_tokens set expires_at = now() - interval '1 second' where id = ${old.listing.id}`;
		expect((await authenticate(null, `Bearer ${old.token}`)).user).toBeNull();

		const bobBrowser = caller(bobWho, null);
		expect((await bobBrowser.apiTokens.list()).map((t) => t.id).sort()).toEqual([old.listing.id, revoked.listing.id, live.listing.id].sort());
		await bobBrowser.apiTokens.revoke({ id: revoked.listing.id });
		expect((await authenticate(null, `Bearer ${revoked.token}`)).user).toBeNull();
		expect((await bobBrowser.apiTokens.list()).map((t) => t.id)).not.toContain(revoked.listing.id);
		// Someone else's token cannot be revoked by id.
		await expect(caller(alice, null).apiTokens.revoke({ id: live.listing.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });

		expect((await authenticate(null, `Bearer ${live.token}`)).user?.id).toBe(bob.id);
		await sql()`update operators set disabled_at = now() where id = ${bob.id}`;
		expect((await authenticate(null, `Bearer ${live.token}`)).user).toBeNull();
	});

	it('the guard: 401 without credentials, a bearer request needs no Origin, a cookie request still does', async () => {
		const { token } = await tokenFor(alice, 'operate');
		const post = (headers: Record<string, string>) =>
			guardRequest(
				req('/trpc/chat.send', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' }),
				new URL(BASE + '/trpc/chat.send')
			);

		expect(await post({})).toEqual({ kind: 'refuse', status: 401, body: { message: 'Sign in first.' } });
		expect(await post({ origin: 'https://evil.example' })).toMatchObject({ kind: 'refuse', status: 401 });
		expect(await post({ authorization: 'Bearer nomos_pat_nope' })).toMatchObject({ kind: 'refuse', status: 401 });
		// curl with a token: no Origin, no cookie.
		expect(await post({ authorization: `Bearer ${token}` })).toMatchObject({ kind: 'pass', auth: { user: { id: alice.id }, apiToken: { scope: 'operate' } } });
		// The cookie without Origin (or from elsewhere) is refused, also with a token beside it.
		const refused = { kind: 'refuse', status: 403, body: { message: 'Cross-origin request refused.' } };
		expect(await post({ cookie })).toEqual(refused);
		expect(await post({ cookie, origin: 'https://evil.example' })).toEqual(refused);
		expect(await post({ cookie, authorization: `Bearer ${token}` })).toEqual(refused);
		expect(await post({ cookie, origin: BASE })).toMatchObject({ kind: 'pass', auth: { user: { id: alice.id } } });
		// Cookie + token from the app's origin is a cookie request: no token in the locals.
		expect(((await post({ cookie, origin: BASE, authorization: `Bearer ${token}` })) as { auth: { apiToken?: unknown } }).auth.apiToken).toBeUndefined();
		// The sign-in form keeps its Origin check without a cookie.
		expect(await guardRequest(req('/login', { method: 'POST', body: 'username=a' }), new URL(BASE + '/login'))).toEqual(refused);
		// Pages without credentials go to sign-in; the REST answer (not an /api path) gets 401 too.
		expect(await guardRequest(req('/ops'), new URL(BASE + '/ops'))).toMatchObject({ kind: 'sign-in' });
		const answer = `/sessions/${crypto.randomUUID()}/questions/${crypto.randomUUID()}/answer`;
		expect(await guardRequest(req(answer, { method: 'POST', body: '{}' }), new URL(BASE + answer))).toMatchObject({ kind: 'refuse', status: 401 });
	});

	it('a read token reads, and is refused every change with 403 and a clear message', async () => {
		const { token, listing } = await tokenFor(alice, 'read');
		const bearer = { authorization: `Bearer ${token}` };
		expect(await guardRequest(req('/trpc/executions.recent', { headers: bearer }), new URL(BASE + '/trpc/executions.recent'))).toMatchObject({ kind: 'pass' });
		for (const path of ['/trpc/executions.decide', '/trpc/chat.send', `/sessions/${crypto.randomUUID()}/questions/${crypto.randomUUID()}/answer`]) {
			const g = await guardRequest(req(path, { method: 'POST', headers: bearer, body: '{}' }), new URL(BASE + path));
			expect(g, path).toEqual({ kind: 'refuse', status: 403, body: READ_ONLY_TOKEN });
		}
		expect(READ_ONLY_TOKEN.message).toContain('scope read');

		// The procedures' own lock, behind the guard: queries yes, mutations no, whatever the role.
		const viaRead = caller(alice, { id: listing.id, name: listing.name, scope: 'read' });
		expect(Array.isArray(await viaRead.executions.recent())).toBe(true);
		await expect(viaRead.executions.decide({ executionId: crypto.randomUUID(), decision: 'approved' })).rejects.toMatchObject({
			code: 'FORBIDDEN',
			message: READ_ONLY_TOKEN.message
		});
		await expect(viaRead.operators.create({ username: 'eve', password: 'a-long-enough-password', role: 'admin' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		// No token makes tokens, not even an operate one (a leaked token cannot mint itself a successor).
		const viaOperate = caller(alice, { id: listing.id, name: listing.name, scope: 'operate' });
		await expect(viaOperate.apiTokens.create({ name: 'x', scope: 'operate', expiresInDays: '30', password: 'a-long-enough-password' })).rejects.toMatchObject({
			code: 'FORBIDDEN'
		});
		await expect(viaOperate.apiTokens.list()).rejects.toMatchObject({ code: 'FORBIDDEN' });
	});

	it('an approval made with an approve token is audited as route rest and names the token', async () => {
		const { listing } = await tokenFor(alice, 'approve');
		const sessionId = await newSession(alice.id);
		const r = await requestExecution(sessionId, { target: 'lxc:strong/100', action: 'pct_start', params: {}, reason: 'test' });
		if ('error' in r) throw new Error(r.error);
		const viaToken = caller(alice, { id: listing.id, name: listing.name, scope: 'approve' });
		await viaToken.executions.decide({ executionId: r.execution.id, decision: 'approved' });
		const [a] = await sql()<{ route: string; actorName: string; detail: Record<string, unknown> }[]>`
			select route, actor_name as "actorName", detail from audit_log where action = 'execution.approved' and subject_id = ${r.execution.id}`;
		expect(a).toMatchObject({ route: 'rest', actorName: 'alice', detail: { token: { id: listing.id, name: 'approve-token' } } });
		expect(JSON.stringify(a.detail)).not.toContain('nomos_pat_');
	});

	it('typed assent sent with an approve token names the token in the audit trail and the note', async () => {
		const { listing } = await tokenFor(alice, 'approve');
		const sessionId = await newSession(alice.id);
		const input = { target: 'lxc:strong/100', action: 'pct_start', params: {}, reason: 'typed' };
		const r = await requestExecution(sessionId, input);
		if ('error' in r) throw new Error(r.error);
		// As the agent's turn leaves it: the request in its latest reply (what typed assent may approve).
		const part = { type: 'tool-request_execution', toolCallId: 'c1', input, state: 'output-available', output: { executionId: r.execution.id } } as MessagePart;
		await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'assistant', parts: [part], status: 'complete', origin: 'chat' }));
		const viaToken = caller(alice, { id: listing.id, name: listing.name, scope: 'approve' });
		await viaToken.chat.send({ sessionId, text: 'yes, start it', shownExecutionIds: [r.execution.id] });
		const [a] = await sql()<{ route: string; actorName: string; detail: Record<string, unknown> }[]>`
			select route, actor_name as "actorName", detail from audit_log where action = 'execution.approved' and subject_id = ${r.execution.id}`;
		expect(a).toMatchObject({ route: 'chat', actorName: 'alice', detail: { token: { id: listing.id, name: 'approve-token' } } });
		const notes = await sql()<{ text: string }[]>`
			select p -> 'data' ->> 'text' as text from messages m, jsonb_array_elements(m.parts) p
			where m.session_id = ${sessionId} and m.role = 'system' and p -> 'data' ->> 'text' like '%by typing%'`;
		expect(notes.map((n) => n.text).join('\n')).toContain('sent with API token "approve-token"');
	});
});

describe('API tokens on the node SSE fast path', () => {
	let server: http.Server;
	let base = '';
	beforeAll(async () => {
		server = http.createServer((q, s) => {
			const streaming = serveNodeSse(q, s);
			if (!streaming) s.writeHead(404).end();
			else streaming.catch(() => s.destroy());
		});
		await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
		base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		server.closeAllConnections();
		await new Promise((r) => server.close(r));
	});

	it('streams for a read token, 401 without one, and a revocation ends that stream only', async () => {
		expect((await fetch(`${base}/api/events`)).status).toBe(401);
		expect((await fetch(`${base}/api/events`, { headers: { authorization: 'Bearer nomos_pat_nope' } })).status).toBe(401);
		const a = await tokenFor(alice, 'read');
		const b = await tokenFor(alice, 'read');
		const ra = await fetch(`${base}/api/events`, { headers: { authorization: `Bearer ${a.token}` } });
		const rb = await fetch(`${base}/api/events`, { headers: { authorization: `Bearer ${b.token}` } });
		expect([ra.status, rb.status]).toEqual([200, 200]);
		expect(ra.headers.get('content-type')).toContain('text/event-stream');

		await caller(alice, null).apiTokens.revoke({ id: a.listing.id });
		// Stream a ends (the iterator finishes); stream b still gets the next event.
		const endedA = (async () => {
			for await (const e of readSse(ra)) void e;
			return 'ended';
		})();
		expect(await Promise.race([endedA, new Promise((r) => setTimeout(() => r('still open'), 5000))])).toBe('ended');
		await emitEventNow(sql(), { sessionId: null, type: 'workers.changed', payload: {} });
		const next = await (async () => {
			for await (const e of readSse(rb)) if (e.type === 'workers.changed') return e.type;
			return 'ended';
		})();
		expect(next).toBe('workers.changed');
	});
});
