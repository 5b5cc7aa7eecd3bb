import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from '../../src/lib/server/auth/session';
import { sql } from '../../src/lib/server/db/index';
import { emitEventNow } from '../../src/lib/server/db/queries/events';
import { createAuthSession, sessionTokenHash } from '../../src/lib/server/db/queries/operators';
import { createOperator } from '../../src/lib/server/auth/accounts';
import { Hub, setHub } from '../../src/lib/server/realtime/hub';
import { serveNodeSse } from '../../src/lib/server/realtime/node-sse';
import { useTestDatabase, waitForLockWaiter } from '../helpers/db';
import { readSse } from '../helpers/sse-client';

useTestDatabase();

const SESSION = '00000000-0000-4000-8000-0000000000c1';
const QUESTION = '00000000-0000-4000-8000-0000000000d1';
/** Three event types, told apart in the streams: A and C carry a session, B does not. */
const A = 'question.raised';
const B = 'assent.updated';
const C = 'question.answered';
let hub: Hub;
let server: http.Server;
let base = '';
let alice: { id: string; token: string };
let bob: { id: string; token: string };
/** Each stream request the server took: its response, when that closed, and when the handler was done with it. */
const served: { res: http.ServerResponse; closed: Promise<void>; handled: Promise<void> }[] = [];

async function signedIn(username: string) {
	const op = await createOperator(sql(), username, 'a-long-enough-password', 'operator');
	return { id: op.id, token: (await createAuthSession(sql(), op.id, 1)).token };
}

beforeAll(async () => {
	hub = new Hub(sql());
	await hub.start();
	setHub(hub);
	alice = await signedIn('alice');
	bob = await signedIn('bob');
	// Alice's chat, shared read-only: every operator's streams may carry its events (access/sessions.ts).
	await sql()`insert into chat_sessions (id, operator_id, shared) values (${SESSION}, ${alice.id}, 'read')`;
	// As server.js: the fast path first, SvelteKit (here a marker) for whatever it does not take.
	server = http.createServer((req, res) => {
		const streaming = serveNodeSse(req, res);
		if (!streaming) res.writeHead(404, { 'x-served-by': 'sveltekit' }).end();
		else {
			served.push({ res, closed: new Promise((r) => res.once('close', () => r())), handled: streaming.catch(() => undefined) });
			streaming.catch(() => res.destroy());
		}
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
	server.closeAllConnections();
	await new Promise((r) => server.close(r));
	setHub(undefined);
	await hub.stop();
});

function get(path: string, headers: Record<string, string> = {}) {
	const ctrl = new AbortController();
	return { res: fetch(base + path, { headers, signal: ctrl.signal }), abort: () => ctrl.abort() };
}

/** Collects events of the given types until `n` arrived or the stream ends. */
async function collect(res: Response, n: number, types?: string[]) {
	const out: { id: number; type: string; sessionId: unknown }[] = [];
	for await (const e of readSse(res)) {
		if (types && !types.includes(e.type)) continue;
		out.push({ id: e.id, type: e.type, sessionId: e.data.sessionId });
		if (out.length >= n) break;
	}
	return out;
}

describe('authenticate(): the one sign-in check (hooks.server.ts and the node SSE fast path)', () => {
	it('gives the locals shape for a valid session cookie', async () => {
		expect(await authenticate(`theme=dark; nomos_session=${alice.token}`)).toEqual({
			sessionToken: alice.token,
			user: { id: alice.id, username: 'alice', role: 'operator' },
			sessionVerifiedAt: expect.any(String)
		});
	});

	it('reads the cookie leniently but never lets a bad one in', async () => {
		expect(await authenticate(undefined)).toEqual({ user: null, sessionToken: null });
		expect(await authenticate('nomos_session=%E0%A4%A')).toEqual({ user: null, sessionToken: '%E0%A4%A', sessionVerifiedAt: null });
		expect(await authenticate('nomos_session=not-a-token')).toMatchObject({ user: null });
		// Percent-encoded characters decode to the token (as SvelteKit's cookies.get does).
		const encoded = [...alice.token].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
		expect((await authenticate(`nomos_session=${encoded}`)).user?.id).toBe(alice.id);
		// Duplicate names: the first wins, whichever it is.
		expect((await authenticate(`nomos_session=${alice.token}; nomos_session=${bob.token}`)).user?.id).toBe(alice.id);
		expect((await authenticate(`nomos_session=nope; nomos_session=${bob.token}`)).user).toBeNull();
	});

	it('refuses an expired session and a disabled operator', async () => {
		const carol = await signedIn('carol');
		const old = await signedIn('dave');
		expect((await authenticate(`nomos_session=${carol.token}`)).user).not.toBeNull();
		await sql()`update auth_sessions set expires_at = now() - interval '1 second' where operator_id = ${old.id}`;
		expect((await authenticate(`nomos_session=${old.token}`)).user).toBeNull();
		await sql()`update operators set disabled_at = now() where id = ${carol.id}`;
		expect((await authenticate(`nomos_session=${carol.token}`)).user).toBeNull();
	});
});

describe('the node SSE fast path', () => {
	it('answers 401 with the hook’s body without a valid session, also for a malformed cookie', async () => {
		for (const cookie of [undefined, 'nomos_session=', 'nomos_session=nope', 'nomos_session=%E0%A4%A', ';;=;']) {
			for (const path of ['/api/events', `/api/sessions/${SESSION}/events`]) {
				const { res } = get(path, cookie === undefined ? {} : { cookie });
				const r = await res;
				expect(r.status, `${path} ${cookie}`).toBe(401);
				expect(r.headers.get('content-type')).toBe('application/json');
				expect(await r.json()).toEqual({ message: 'Sign in first.' });
			}
		}
	});

	it('leaves every other path, method and look-alike to SvelteKit', async () => {
		const cookie = `nomos_session=${alice.token}`;
		for (const path of [
			'/api/eventsx',
			'/foo/events',
			'/api/sessions/x/events',
			`/api/sessions/${SESSION}/events/extra`,
			'/api/%65vents',
			'/ops?events=1',
			'/trpc/x?input=/api/events'
		]) {
			const r = await get(path, { cookie }).res;
			expect(r.status, path).toBe(404);
			expect(r.headers.get('x-served-by')).toBe('sveltekit');
		}
		const post = await fetch(`${base}/api/events`, { method: 'POST', headers: { cookie } });
		expect(post.headers.get('x-served-by')).toBe('sveltekit');
	});

	it('replays after Last-Event-ID (or ?after=), then streams live; session streams carry one session', async () => {
		const cookie = `nomos_session=${alice.token}`;
		const start = await emitEventNow(sql(), { type: 'workers.changed', payload: {} });
		const a = await emitEventNow(sql(), { type: A, sessionId: SESSION, payload: { questionId: QUESTION, prompt: 'a' } });
		await emitEventNow(sql(), { type: B, payload: { open: false, by: null } });

		const byHeader = get('/api/events', { cookie, 'last-event-id': String(start) });
		const byQuery = get(`/api/events?after=${start}`, { cookie });
		const session = get(`/api/sessions/${SESSION.toUpperCase()}/events`, { cookie, 'last-event-id': String(start) });
		const r = await byHeader.res;
		expect(r.status).toBe(200);
		expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
		const fleet = collect(r, 3, [A, B, C]);
		const fleet2 = collect(await byQuery.res, 2, [A, B]);
		const one = collect(await session.res, 2, [A, B, C]);
		await emitEventNow(sql(), { type: C, sessionId: SESSION, payload: { questionId: QUESTION, via: 'chat' } });
		expect((await fleet).map((e) => e.type)).toEqual([A, B, C]);
		expect((await fleet2).map((e) => e.type)).toEqual([A, B]);
		expect(await one).toEqual([
			{ id: a, type: A, sessionId: SESSION },
			{ id: expect.any(Number), type: C, sessionId: SESSION }
		]);
		for (const c of [byHeader, byQuery, session]) c.abort();
	});

	it('auth.revoked closes that operator’s streams (not the kept sign-in, not anyone else’s)', async () => {
		const a = await signedIn('erin');
		const kept = (await createAuthSession(sql(), a.id, 1)).token;
		const revoked = await get('/api/events', { cookie: `nomos_session=${a.token}` }).res;
		const keptStream = get(`/api/sessions/${SESSION}/events`, { cookie: `nomos_session=${kept}` });
		const other = get('/api/events', { cookie: `nomos_session=${bob.token}` });
		const keptRes = await keptStream.res;
		const otherRes = await other.res;
		for (const r of [revoked, keptRes, otherRes]) expect(r.status).toBe(200);
		const ended = collect(revoked, Infinity, ['auth.revoked']);
		await emitEventNow(sql(), { type: 'auth.revoked', payload: { operatorId: a.id, keep: sessionTokenHash(kept) } });
		// The revoked stream ends without ever seeing the revocation.
		expect(await ended).toEqual([]);
		// The others stay open: they still get the next event.
		const next = [collect(keptRes, 1, [C]), collect(otherRes, 1, [C])];
		await emitEventNow(sql(), { type: C, sessionId: SESSION, payload: { questionId: QUESTION, via: 'chat' } });
		for (const got of await Promise.all(next)) expect(got.map((e) => e.type)).toEqual([C]);
		keptStream.abort();
		other.abort();
	});

	it('a client that leaves during the session lookup opens no stream', async () => {
		// Hold the session lookup on a table lock until the client is gone.
		let release!: () => void;
		let locked!: () => void;
		const isLocked = new Promise<void>((r) => (locked = r));
		const holder = sql().begin(async (tx) => {
			await tx`lock table auth_sessions in access exclusive mode`;
			locked();
			await new Promise<void>((r) => (release = r));
		});
		await isLocked;
		const before = hub.subscriberCount;
		const c = get('/api/events', { cookie: `nomos_session=${alice.token}` });
		await waitForLockWaiter('%auth_sessions%');
		const req = served.at(-1)!;
		c.abort();
		await c.res.catch(() => undefined);
		// The server saw the client leave while the lookup still waits; then the lookup answers.
		await req.closed;
		release();
		await holder;
		await req.handled;
		expect(req.res.headersSent).toBe(false);
		expect(hub.subscriberCount).toBeLessThanOrEqual(before);
	});
});
