import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { emitEvent, emitEventNow } from '../../src/lib/server/db/queries/events';
import { Hub } from '../../src/lib/server/realtime/hub';
import { eventStreamResponse } from '../../src/lib/server/realtime/sse';
import { useTestDatabase } from '../helpers/db';
import { readSse } from '../helpers/sse-client';
import { scaled } from '../helpers/time';

useTestDatabase();
let hub: Hub;

beforeAll(async () => {
	hub = new Hub(sql());
	await hub.start();
});
afterAll(async () => {
	await hub.stop();
});

function open(after: number, scope: { sessionId?: string } = {}) {
	const ctrl = new AbortController();
	// An admin reads every session's events (access/sessions.ts); owners are tested in owners.test.ts.
	const res = eventStreamResponse({
		sql: sql(),
		hub,
		after,
		scope: { ...scope, viewer: { id: '00000000-0000-4000-8000-00000000000a', role: 'admin' as const } },
		signal: ctrl.signal
	});
	return { events: readSse(res), abort: () => ctrl.abort() };
}

const SESSION = '00000000-0000-4000-8000-000000000001';

describe('realtime: LISTEN/NOTIFY → hub → SSE', () => {
	it('a client 1,000 events behind catches up in order, then gets live ones', async () => {
		const start = await emitEventNow(sql(), { type: 'workers.changed', payload: {} });
		for (let i = 0; i < 1000; i += 100) {
			await sql().begin(async (tx) => {
				for (let j = 0; j < 100; j++) await emitEvent(tx, { type: 'inventory.synced', payload: { host: 'backlog', containers: i + j } });
			});
		}
		const c = open(start);
		const seen: number[] = [];
		let live = false;
		for await (const e of c.events) {
			seen.push(e.data.payload ? (e.data.payload as { containers: number }).containers : -1);
			if (seen.length === 1000 && !live) {
				live = true;
				await emitEventNow(sql(), { type: 'inventory.synced', payload: { host: 'backlog', containers: 1000 } });
			}
			if (seen.length === 1001) break;
		}
		c.abort();
		expect(seen).toEqual(Array.from({ length: 1001 }, (_, i) => i));
	});

	it('session streams carry only that session; the global stream skips message updates', async () => {
		const start = await emitEventNow(sql(), { type: 'workers.changed', payload: {} });
		const s = open(start, { sessionId: SESSION });
		const g = open(start);
		await emitEventNow(sql(), { type: 'message.updated', sessionId: SESSION, payload: { messageId: '00000000-0000-4000-8000-0000000000aa' } });
		await emitEventNow(sql(), { type: 'session.updated', sessionId: '00000000-0000-4000-8000-000000000002', payload: {} });
		await emitEventNow(sql(), {
			type: 'question.raised',
			sessionId: SESSION,
			payload: { questionId: '00000000-0000-4000-8000-0000000000bb', prompt: 'which host?' }
		});
		const fromSession: string[] = [];
		for await (const e of s.events) {
			fromSession.push(e.type);
			if (fromSession.length === 2) break;
		}
		const fromGlobal: string[] = [];
		for await (const e of g.events) {
			fromGlobal.push(e.type);
			if (fromGlobal.length === 2) break;
		}
		s.abort();
		g.abort();
		expect(fromSession).toEqual(['message.updated', 'question.raised']);
		expect(fromGlobal.slice(0, 2)).toEqual(['session.updated', 'question.raised']);
	});

	it(
		'chaos: 20 clients, 2,000 events, random disconnects and a killed LISTEN: every event once, in order',
		async () => {
			const start = await emitEventNow(sql(), { type: 'workers.changed', payload: {} });
			const TOTAL = 2000;
			const CLIENTS = 20;
			const received: number[][] = Array.from({ length: CLIENTS }, () => []);
			let producing = true;

			async function client(i: number) {
				let cursor = start;
				while (received[i].length < TOTAL) {
					const c = open(cursor);
					const dropAfter = Math.floor(Math.random() * 300) + 1;
					let n = 0;
					for await (const e of c.events) {
						if (e.type !== 'inventory.synced') continue;
						received[i].push((e.data.payload as { containers: number }).containers);
						cursor = e.id;
						if (received[i].length >= TOTAL) break;
						if (producing && ++n >= dropAfter) break; // drop the connection, reconnect with Last-Event-ID
					}
					c.abort();
				}
			}

			async function produce() {
				for (let n = 0; n < TOTAL; n += 20) {
					await sql().begin(async (tx) => {
						for (let j = 0; j < 20; j++) await emitEvent(tx, { type: 'inventory.synced', payload: { host: 'chaos', containers: n + j } });
					});
					if (n === 1000) {
						const before = hub.listenCount;
						await sql()`select pg_terminate_backend(pid) from pg_stat_activity where query like 'listen %' and pid <> pg_backend_pid()`;
						const until = Date.now() + scaled(10_000);
						while (hub.listenCount === before && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
						expect(hub.listenCount).toBeGreaterThan(before);
					}
				}
				producing = false;
			}

			await Promise.all([produce(), ...Array.from({ length: CLIENTS }, (_, i) => client(i))]);
			const expected = Array.from({ length: TOTAL }, (_, i) => i);
			for (const r of received) expect(r).toEqual(expected);
		},
		scaled(120_000)
	);
});
