// LiveEvents' catch-up for a page that subscribes after its load (`since`): what the stream
// received after the page's cursor is handed over first and in order, what the page's data
// already holds is skipped, and a gap it cannot replay says so. EventSource is the browser's; a
// small stand-in below delivers named events as the browser would.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LiveEvents, type LiveEvent } from '../../src/lib/state/live-events.svelte';

class FakeEventSource {
	static last: FakeEventSource | null = null;
	static CLOSED = 2;
	readyState = 1;
	onopen: (() => void) | null = null;
	onerror: (() => void) | null = null;
	onmessage: ((m: MessageEvent) => void) | null = null;
	listeners = new Map<string, Array<(m: MessageEvent) => void>>();
	constructor(public url: string) {
		FakeEventSource.last = this;
	}
	addEventListener(type: string, fn: (m: MessageEvent) => void) {
		this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
	}
	close() {
		this.readyState = 2;
	}
	/** One SSE message `event: type`, `id: id`, as the browser hands it to listeners of that type only. */
	emit(type: string, id: number, extra: Record<string, unknown> = {}) {
		const m = { data: JSON.stringify({ id, type, sessionId: null, payload: {}, createdAt: '', ...extra }), lastEventId: String(id), type } as MessageEvent;
		for (const fn of this.listeners.get(type) ?? []) fn(m);
	}
}

const g = globalThis as { EventSource?: unknown };
beforeEach(() => {
	g.EventSource = FakeEventSource;
});
afterEach(() => {
	delete g.EventSource;
});

const flush = () => new Promise((r) => setTimeout(r, 0));
const ids = (xs: LiveEvent[]) => xs.map((e) => `${e.type}#${e.id}`);

describe('LiveEvents for a page that subscribes after its load', () => {
	it('hands over what arrived after the page’s cursor, in order, then live events, each once', async () => {
		const stream = new LiveEvents('/api/events', 10, { keep: ['execution.updated', 'plan.updated'] }).connect();
		const src = FakeEventSource.last!;
		src.emit('execution.updated', 11);
		src.emit('plan.updated', 12);
		src.emit('execution.updated', 14);
		const seen: LiveEvent[] = [];
		// The page read its data as of event 11: it already holds 11.
		stream.onAny(['execution.updated', 'plan.updated'], (e) => seen.push(e), { after: 11, onGap: () => seen.push({ id: -1 } as LiveEvent) });
		await flush();
		src.emit('execution.updated', 15);
		expect(ids(seen)).toEqual(['plan.updated#12', 'execution.updated#14', 'execution.updated#15']);
	});

	it('skips events the page’s data already holds when they arrive after it subscribed', async () => {
		const stream = new LiveEvents('/api/events', 10, { keep: ['execution.updated'] }).connect();
		const src = FakeEventSource.last!;
		const seen: LiveEvent[] = [];
		// The page's load ran later than the stream's last event: it holds everything up to 13.
		stream.onAny(['execution.updated'], (e) => seen.push(e), { after: 13 });
		src.emit('execution.updated', 12);
		src.emit('execution.updated', 13);
		src.emit('execution.updated', 14);
		await flush();
		expect(ids(seen)).toEqual(['execution.updated#14']);
	});

	it('says there is a gap when it cannot replay: a cursor older than the stream, or a type it does not keep', async () => {
		const stream = new LiveEvents('/api/events', 20, { keep: ['execution.updated'] }).connect();
		const src = FakeEventSource.last!;
		stream.on('question.raised', () => undefined);
		src.emit('execution.updated', 21);
		src.emit('question.raised', 22);
		let gaps = 0;
		const seen: LiveEvent[] = [];
		stream.onAny(['execution.updated'], (e) => seen.push(e), { after: 15, onGap: () => gaps++ });
		stream.onAny(['question.raised'], (e) => seen.push(e), { after: 21, onGap: () => gaps++ });
		// Nothing to catch up on: no gap, whatever is kept.
		stream.onAny(['question.raised'], (e) => seen.push(e), { after: 22, onGap: () => gaps++ });
		await flush();
		expect(gaps).toBe(2);
		expect(seen).toEqual([]);
	});

	it('keeps the latest snapshot of each execution, and hands over nothing once unsubscribed', async () => {
		const stream = new LiveEvents('/api/events', 0, { keep: ['execution.updated', 'execution.step'] }).connect();
		const src = FakeEventSource.last!;
		src.emit('execution.updated', 1, { execution: { id: 'a', status: 'approved' } });
		src.emit('execution.step', 2, { execution: { id: 'a', status: 'running', steps: ['…4 KB of output…'] } });
		src.emit('execution.step', 3, { execution: { id: 'a', status: 'running', steps: ['…8 KB of output…'] } });
		src.emit('execution.updated', 4, { execution: { id: 'b', status: 'awaiting_approval' } });
		src.emit('execution.updated', 5, { execution: { id: 'a', status: 'succeeded' } });
		const seen: LiveEvent[] = [];
		stream.onAny(['execution.updated', 'execution.step'], (e) => seen.push(e), { after: 0 });
		let late = 0;
		const off = stream.onAny(['execution.updated'], () => late++, { after: 0, onGap: () => late++ });
		off();
		await flush();
		// Each later snapshot holds all of the one it replaced: the last step of a, then b, then a's end.
		expect(ids(seen)).toEqual(['execution.step#3', 'execution.updated#4', 'execution.updated#5']);
		expect(late).toBe(0);
	});

	it('keeps only the last 300 kept events: a cursor older than those is a gap', async () => {
		const stream = new LiveEvents('/api/events', 0, { keep: ['execution.updated'] }).connect();
		const src = FakeEventSource.last!;
		for (let id = 1; id <= 600; id++) src.emit('execution.updated', id, { execution: { id: `e${id}` } });
		let gaps = 0;
		const seen: LiveEvent[] = [];
		stream.onAny(['execution.updated'], (e) => seen.push(e), { after: 50, onGap: () => gaps++ });
		stream.onAny(['execution.updated'], (e) => seen.push(e), { after: 598, onGap: () => gaps++ });
		await flush();
		expect(gaps).toBe(1);
		expect(ids(seen)).toEqual(['execution.updated#599', 'execution.updated#600']);
	});
});
