import type { EventPayload, EventType } from '../schemas/events';

/**
 * One event as the server streams it (see src/lib/server/realtime/sse.ts): for each type, its
 * payload as schemas/events.ts has it (the emitter checked it against that schema).
 */
export type LiveEvent<T extends EventType = EventType> = {
	[K in T]: {
		id: number;
		sessionId: string | null;
		type: K;
		payload: EventPayload<K>;
		message?: unknown;
		execution?: unknown;
		plan?: unknown;
		createdAt: string;
	};
}[T];

type Handler<T extends EventType = EventType> = (e: LiveEvent<T>) => void;

/** A late subscriber's start: its data is as of event `after`; `onGap` runs when what came since cannot be replayed. */
export type Since = { after: number; onGap?: () => void };

/** How many kept events a stream remembers for late subscribers (the latest per subject). */
const KEEP_LAST = 300;

/**
 * What a kept event is about: an event carrying an execution's or a plan's snapshot replaces the
 * one before it of that type and subject (the newer snapshot holds all of it); any other is its own.
 */
function subjectOf(e: LiveEvent): string {
	const id = (e.execution as { id?: string } | undefined)?.id ?? (e.plan as { id?: string } | undefined)?.id;
	return id ? `${e.type}:${id}` : `${e.type}#${e.id}`;
}

/**
 * A live event stream over SSE. EventSource reconnects by itself and sends Last-Event-ID, and
 * the server replays what was missed; handlers see every event once, in order.
 */
export class LiveEvents {
	#source: EventSource | null = null;
	// The handler registry is not state: nothing renders from it, so a plain Map is right.
	// eslint-disable-next-line svelte/prefer-svelte-reactivity
	#handlers = new Map<string, Set<Handler>>();
	#lastId = 0;
	/** Types whose events are remembered (the last KEEP_LAST), so a page that subscribes late can catch up. */
	#keep: Set<EventType>;
	/** Kept events by subject, oldest first (a newer one of a subject moves to the end). */
	// eslint-disable-next-line svelte/prefer-svelte-reactivity -- not state: nothing renders from it
	#recent = new Map<string, LiveEvent>();
	/** `#recent` holds, for every subject, its latest kept event after this id. */
	#floor: number;
	/** `stale`: the server no longer has the events this page missed; only a reload shows the truth. */
	status = $state<'connecting' | 'open' | 'reconnecting' | 'closed' | 'stale'>('connecting');

	constructor(
		private url: string,
		after: number,
		opts: { keep?: EventType[] } = {}
	) {
		this.#lastId = after;
		this.#floor = after;
		// eslint-disable-next-line svelte/prefer-svelte-reactivity -- not state: nothing renders from it
		this.#keep = new Set(opts.keep);
		// eslint-disable-next-line svelte/prefer-svelte-reactivity -- part of the handler registry
		for (const t of this.#keep) this.#handlers.set(t, new Set());
	}

	get lastId() {
		return this.#lastId;
	}

	connect(): this {
		if (this.#source) return this;
		const sep = this.url.includes('?') ? '&' : '?';
		const source = new EventSource(`${this.url}${sep}after=${this.#lastId}`);
		this.#source = source;
		source.onopen = () => (this.status = 'open');
		source.onerror = () => {
			if (source.readyState === EventSource.CLOSED) {
				// The server refused (e.g. signed out); EventSource gives up, so reopen from our cursor.
				this.status = 'closed';
				this.#source = null;
			} else this.status = 'reconnecting';
		};
		source.onmessage = (m) => this.#dispatch(m);
		source.addEventListener('stream.reset', () => {
			source.close();
			this.#source = null;
			this.status = 'stale';
		});
		for (const type of this.#handlers.keys()) source.addEventListener(type, (m) => this.#dispatch(m));
		return this;
	}

	/** Handles events of one type; returns an unsubscribe function. See `onAny` for `since`. */
	on<T extends EventType>(type: T, fn: Handler<T>, since?: Since): () => void {
		return this.onAny([type], fn, since);
	}

	/**
	 * Handles events of any of the given types; returns one unsubscribe function for all.
	 *
	 * With `since`, for a page whose data was read as of event `since.after` (its load's cursor):
	 * the events of these types that this stream received after that id are handed over first (in
	 * order, before any newer one), and those up to it, still on their way, are skipped. When the
	 * stream cannot tell what came in between (older than what it keeps, or a type it does not
	 * keep), `since.onGap` runs instead, so the page reads its data again.
	 */
	onAny<T extends EventType>(types: readonly T[], handler: Handler<T>, since?: Since): () => void {
		// Stored with every other type's handlers: only events of `types` ever reach it (see #dispatch).
		const fn = handler as Handler;
		const upTo = this.#lastId;
		const from = since?.after ?? upTo;
		// Live from here: only what is newer than both the page's data and what this stream has handed out.
		const live: Handler = since ? (e) => e.id > Math.max(from, upTo) && fn(e) : fn;
		const offs = types.map((t) => this.#add(t, live));
		let subscribed = true;
		if (since && from < upTo) {
			const complete = from >= this.#floor && types.every((t) => this.#keep.has(t));
			const missed = complete ? [...this.#recent.values()].filter((e) => e.id > from && e.id <= upTo && (types as readonly EventType[]).includes(e.type)) : [];
			// Before the next message event (a macrotask), so order holds; not after an unsubscribe.
			queueMicrotask(() => {
				if (!subscribed) return;
				if (!complete) since.onGap?.();
				else for (const e of missed) fn(e);
			});
		}
		return () => {
			subscribed = false;
			offs.forEach((off) => off());
		};
	}

	#add(type: EventType, fn: Handler): () => void {
		let set = this.#handlers.get(type);
		if (!set) {
			// eslint-disable-next-line svelte/prefer-svelte-reactivity -- part of the handler registry
			set = new Set();
			this.#handlers.set(type, set);
			this.#source?.addEventListener(type, (m) => this.#dispatch(m));
		}
		set.add(fn);
		return () => set.delete(fn);
	}

	close(): void {
		this.#source?.close();
		this.#source = null;
		if (this.status !== 'stale') this.status = 'closed';
	}

	#dispatch(m: MessageEvent): void {
		let e: LiveEvent;
		try {
			e = JSON.parse(m.data as string) as LiveEvent;
		} catch {
			return;
		}
		// Compact events (message.delta) leave their id and type to the SSE lines.
		e.id ??= Number(m.lastEventId);
		e.type ??= m.type as EventType;
		if (e.id <= this.#lastId) return;
		this.#lastId = e.id;
		if (this.#keep.has(e.type)) {
			const key = subjectOf(e);
			this.#recent.delete(key);
			this.#recent.set(key, e);
			if (this.#recent.size > KEEP_LAST) {
				const [oldest, first] = this.#recent.entries().next().value!;
				this.#recent.delete(oldest);
				this.#floor = first.id;
			}
		}
		for (const fn of this.#handlers.get(e.type) ?? []) fn(e);
	}
}
