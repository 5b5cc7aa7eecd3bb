import type { ChatMessage } from '$lib/chat-types';
import type { MessageDelta } from '$lib/types/messages';
import { applyDelta, newerSnapshot } from '$lib/messages/apply';
import { trpc } from '$lib/trpc';
import { LiveEvents, type LiveEvent } from './live-events.svelte';

/**
 * One chat session's messages, kept current from the session's SSE stream. `message.updated`
 * carries a message's snapshot (the highest rev wins); `message.delta` carries what a streaming
 * message gained since its previous rev, folded in with the AI SDK's own reader — the same fold
 * the server stored, so the page ends with exactly the stored message. Events are applied one
 * at a time, in order. A delta that does not follow (never expected) reloads the messages.
 */
export class ChatState {
	messages = $state<ChatMessage[]>([]);
	#events: LiveEvents;
	#offs: Array<() => void> = [];
	#queue: Promise<void> = Promise.resolve();

	constructor(
		readonly sessionId: string,
		initial: ChatMessage[],
		cursor: number
	) {
		this.messages = [...initial].sort((a, b) => a.seq - b.seq);
		this.#events = new LiveEvents(`/api/sessions/${sessionId}/events`, cursor);
		this.#offs.push(this.#events.on('message.updated', (e) => this.#serial(() => this.#apply(e))));
		this.#offs.push(this.#events.on('message.delta', (e) => this.#serial(() => this.#fold(e.payload as MessageDelta))));
	}

	get connection() {
		return this.#events.status;
	}

	/** The session's live stream, for other features (questions, approvals) to listen on. */
	get events(): LiveEvents {
		return this.#events;
	}

	/** Resolves once every event received so far is applied (for tests and callers that need it). */
	get settled(): Promise<void> {
		return this.#queue;
	}

	connect(): this {
		this.#events.connect();
		// The SDK's fold is a separate chunk (see messages/apply.ts): fetched once the page is up, before the first delta needs it.
		setTimeout(() => void import('$lib/messages/fold'), 0);
		return this;
	}

	close(): void {
		this.#offs.forEach((off) => off());
		this.#events.close();
	}

	get busy(): boolean {
		return this.messages.some((m) => m.status === 'streaming' || m.status === 'queued');
	}

	get streaming(): ChatMessage | undefined {
		return this.messages.find((m) => m.status === 'streaming');
	}

	/** Shows an optimistic copy of a just-sent message until its snapshot arrives. */
	upsert(m: ChatMessage): void {
		const i = this.messages.findIndex((x) => x.id === m.id);
		if (i >= 0) {
			if (!newerSnapshot(this.messages[i], m)) return;
			this.messages[i] = m;
		} else {
			this.messages.push(m);
			this.messages.sort((a, b) => a.seq - b.seq);
		}
	}

	#serial(fn: () => void | Promise<void>): void {
		this.#queue = this.#queue.then(fn).catch((e) => console.error('[nomos] chat update failed', e));
	}

	#apply(e: LiveEvent): void {
		const m = e.message as ChatMessage | undefined;
		if (m && m.sessionId === this.sessionId) this.upsert(m);
	}

	async #fold(d: MessageDelta): Promise<void> {
		const next = await applyDelta(this.messages.find((x) => x.id === d.messageId), d);
		if (next === 'gap') return this.#reload();
		if (next === 'skip') return;
		const i = this.messages.findIndex((x) => x.id === d.messageId);
		this.messages[i] = next;
	}

	async #reload(): Promise<void> {
		// Typed by hand: inferring the procedure's output through the SDK's part union is too deep for tsc.
		const query = trpc().chat.messages.query as unknown as (i: { sessionId: string }) => Promise<{ messages: ChatMessage[] }>;
		const { messages } = await query({ sessionId: this.sessionId });
		for (const m of messages) this.upsert(m);
	}
}
