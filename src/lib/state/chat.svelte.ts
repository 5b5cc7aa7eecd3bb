import type { ChatMessage } from '$lib/chat-types';
import type { MessageDelta } from '$lib/types/messages';
import { applyDelta, newerSnapshot } from '$lib/messages/apply';
import { trpc } from '$lib/trpc';
import { LiveEvents, type LiveEvent } from './live-events.svelte';

/**
 * The order the chat shows: by `seq`, with the operator's queued messages last. A turn that takes
 * a queued message gives it a new `seq` after whatever was written meanwhile (a continuation's
 * note and reply), so it stays below them, where the agent read it, and never jumps.
 */
export function transcriptOrder(a: Pick<ChatMessage, 'seq' | 'status'>, b: Pick<ChatMessage, 'seq' | 'status'>): number {
	return Number(a.status === 'queued') - Number(b.status === 'queued') || a.seq - b.seq;
}

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
		this.messages = [...initial].sort(transcriptOrder);
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
			const moved = this.messages[i].seq !== m.seq || this.messages[i].status !== m.status;
			this.messages[i] = m;
			if (moved) this.messages.sort(transcriptOrder);
		} else {
			this.messages.push(m);
			this.messages.sort(transcriptOrder);
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
		const next = await applyDelta(
			this.messages.find((x) => x.id === d.messageId),
			d
		);
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
