/** One event as the server streams it (see src/lib/server/realtime/sse.ts). */
export type LiveEvent = {
	id: number;
	sessionId: string | null;
	type: string;
	payload: Record<string, unknown>;
	message?: unknown;
	execution?: unknown;
	plan?: unknown;
	createdAt: string;
};

type Handler = (e: LiveEvent) => void;

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
	/** `stale`: the server no longer has the events this page missed; only a reload shows the truth. */
	status = $state<'connecting' | 'open' | 'reconnecting' | 'closed' | 'stale'>('connecting');

	constructor(
		private url: string,
		after: number
	) {
		this.#lastId = after;
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

	/** Handles events of one type; returns an unsubscribe function. */
	on(type: string, fn: Handler): () => void {
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

	/** Handles events of any of the given types (`on` for each); returns one unsubscribe function for all. */
	onAny(types: string[], fn: Handler): () => void {
		const offs = types.map((t) => this.on(t, fn));
		return () => offs.forEach((off) => off());
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
		e.type ??= m.type;
		if (e.id <= this.#lastId) return;
		this.#lastId = e.id;
		for (const fn of this.#handlers.get(e.type) ?? []) fn(e);
	}
}
