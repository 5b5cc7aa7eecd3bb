// A streaming turn reaches browsers as `message.delta` events (UI message chunks), not as
// snapshots. Whatever moment a client joins (page load: the composed message + the cursor) or
// drops and comes back (Last-Event-ID), folding what it receives must end at exactly the stored
// message. Property test: 50 clients, each joining and disconnecting at random points of real
// turns (scripted model, real Postgres, LISTEN/NOTIFY hub, SSE streams).
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { latestEventId } from '../../src/lib/server/db/queries/events';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { getMessage, listMessages } from '../../src/lib/server/conversation/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { eventStreamResponse } from '../../src/lib/server/realtime/sse';
import { applyDelta, newerSnapshot } from '../../src/lib/messages/apply';
import { canonicalJson } from '../../src/lib/messages/fold';
import type { MessageDelta, MessageRow } from '../../src/lib/types/messages';
import { readSse } from '../helpers/sse-client';
import { prng } from '../helpers/hostile';
import { view } from '../helpers/message-view';
import { useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { llm, hub } = useStage({ model: true });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function newSession(text: string): Promise<string> {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'deltas');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' });
		return id;
	});
}

/** Markdown-ish text with quotes, newlines and non-ASCII, so escaping is exercised too. */
function prose(n: number, tag: string): string {
	let s = '';
	for (let i = 0; s.length < n; i++) s += `${tag} line ${i}: "quoted" — ünïcode ✓ \`code\` **bold**\n`;
	return s.slice(0, n);
}

/**
 * One browser tab: loads the page at a random moment (cursor, then the composed messages), then
 * follows the session stream; drops its connection at random moments and resumes after the last
 * id it saw, as EventSource does with Last-Event-ID. Returns when its copy of `messageId` is final.
 */
async function tab(sessionId: string, rand: () => number, opts: { joinMs: number; drops: number[] }) {
	await sleep(opts.joinMs);
	let cursor = await latestEventId(sql());
	const held = new Map<string, MessageRow>();
	for (const m of await listMessages(sql(), sessionId)) held.set(m.id, m);
	let midTurnDrops = 0;
	const gaps: string[] = [];
	const drops = [...opts.drops];
	const final = () => [...held.values()].some((m) => m.role === 'assistant' && m.status !== 'streaming');
	while (!final()) {
		const ctrl = new AbortController();
		const res = eventStreamResponse({
			sql: sql(),
			hub: hub(),
			after: cursor,
			scope: { sessionId, viewer: { id: '00000000-0000-4000-8000-00000000000a', role: 'admin' as const } },
			signal: ctrl.signal
		});
		const dropAt = drops.shift();
		const timer = dropAt === undefined ? undefined : setTimeout(() => ctrl.abort(), dropAt);
		try {
			for await (const e of readSse(res, ctrl.signal)) {
				cursor = e.id;
				if (e.type === 'message.updated') {
					const m = e.data.message as MessageRow | undefined;
					if (m && newerSnapshot(held.get(m.id), m)) held.set(m.id, m);
				} else if (e.type === 'message.delta') {
					const d = e.data.payload as MessageDelta;
					const next = await applyDelta(held.get(d.messageId), d);
					if (next === 'gap') gaps.push(`rev ${d.rev} of ${d.messageId} (held ${held.get(d.messageId)?.rev})`);
					else if (next !== 'skip') held.set(d.messageId, next);
				}
				if (final()) break;
			}
		} catch (e) {
			if ((e as Error).name !== 'AbortError') throw e;
		} finally {
			clearTimeout(timer);
			ctrl.abort();
		}
		if (!final()) {
			midTurnDrops++;
			await sleep(Math.floor(rand() * 40));
		}
	}
	return { held, midTurnDrops, gaps };
}

describe('streaming deltas', () => {
	it(
		'every tab ends with exactly the stored message, whenever it joined or dropped (50 tabs, random points)',
		async () => {
			const seed = Number(process.env.NOMOS_PROPERTY_SEED ?? Date.now() % 1_000_000);
			const rand = prng(seed);
			const sessionId = await newSession('what runs on strong?');
			// Three model steps: text and calls (one with arguments that do not fit), text and a call, a long text.
			llm.push({
				text: prose(3000, 'a'),
				toolCalls: [
					{ name: 'search_knowledge', args: { query: 'nginx' } },
					{ name: 'list_entities', args: { kind: 'NOT A KIND' } }
				],
				delayMs: 4
			});
			llm.push({ text: prose(2000, 'b'), toolCalls: [{ name: 'search_knowledge', args: { query: 'caddy' } }], delayMs: 4 });
			llm.push({ text: prose(6000, 'c'), chunkSize: 16, delayMs: 4 });

			const started = Date.now();
			const turn = runTurn({ sessionId, origin: 'chat' });
			const TURN_MS = 2500;
			const tabs = Array.from({ length: 50 }, () => {
				const joinMs = Math.floor(rand() * TURN_MS * 0.6);
				const drops = [Math.floor(rand() * TURN_MS * 0.4) + 1, ...(rand() < 0.5 ? [Math.floor(rand() * 400) + 1] : [])];
				return tab(sessionId, rand, { joinMs, drops });
			});
			const r = await turn;
			const turnMs = Date.now() - started;
			const results = await Promise.all(tabs);
			expect(r.status).toBe('complete');

			const stored = (await getMessage(sql(), r.messageId))!;
			expect(stored.status).toBe('complete');
			// The stored message is the whole turn: three steps, the texts in full, every call with its result.
			const v = view(stored.parts);
			expect(v.filter((p) => p.type === 'tool-call').map((p) => p.type === 'tool-call' && [p.toolName, p.state])).toEqual([
				['search_knowledge', 'done'],
				['list_entities', 'error'],
				['search_knowledge', 'done']
			]);
			expect(stored.parts.filter((p) => p.type === 'step-start')).toHaveLength(3);
			const text = v.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
			expect(text).toBe(prose(3000, 'a') + prose(2000, 'b') + prose(6000, 'c'));

			const want = canonicalJson({ parts: stored.parts, status: stored.status, rev: stored.rev });
			let drops = 0;
			for (const [i, t] of results.entries()) {
				expect(t.gaps, `tab ${i} (seed ${seed})`).toEqual([]);
				const mine = t.held.get(r.messageId)!;
				expect(canonicalJson({ parts: mine.parts, status: mine.status, rev: mine.rev }), `tab ${i} (seed ${seed})`).toBe(want);
				drops += t.midTurnDrops;
			}
			console.log(`[stream-deltas] seed ${seed}: turn ${turnMs} ms, ${stored.rev} deltas, ${drops} reconnects mid-turn over 50 tabs`);
			expect(drops).toBeGreaterThanOrEqual(50);
		},
		scaled(120_000)
	);

	it(
		'a reader that loads a streaming message gets it as far as its deltas go',
		async () => {
			const sessionId = await newSession('talk');
			llm.push({ text: prose(4000, 'd'), chunkSize: 16, delayMs: 5 });
			const turn = runTurn({ sessionId, origin: 'chat' });
			let mid: MessageRow | undefined;
			for (let i = 0; i < 200 && !mid; i++) {
				await sleep(20);
				const m = (await listMessages(sql(), sessionId)).find((x) => x.role === 'assistant');
				if (m && m.status === 'streaming' && m.rev >= 3) mid = m;
			}
			expect(mid, 'a streaming message with deltas').toBeDefined();
			// The row itself is not rewritten while streaming: the text comes from the deltas.
			const [row] = await sql()<{ parts: unknown[]; rev: number }[]>`select parts, rev from messages where id = ${mid!.id}`;
			expect(row.parts).toEqual([]);
			const sofar = view(mid!.parts)
				.flatMap((p) => (p.type === 'text' ? [p.text] : []))
				.join('');
			expect(sofar.length).toBeGreaterThan(0);
			expect(prose(4000, 'd').startsWith(sofar)).toBe(true);
			await turn;
		},
		scaled(60_000)
	);
});
