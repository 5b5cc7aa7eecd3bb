import type { ChatMessage } from '$lib/chat-types';
import { LiveEvents, type LiveEvent } from './live-events.svelte';

/**
 * One chat session's messages, kept current from the session's SSE stream: every
 * `message.updated` carries the message's snapshot; the highest rev wins.
 */
export class ChatState {
	messages = $state<ChatMessage[]>([]);
	#events: LiveEvents;
	#offs: Array<() => void> = [];

	constructor(
		readonly sessionId: string,
		initial: ChatMessage[],
		cursor: number
	) {
		this.messages = [...initial].sort((a, b) => a.seq - b.seq);
		this.#events = new LiveEvents(`/api/sessions/${sessionId}/events`, cursor);
		this.#offs.push(this.#events.on('message.updated', (e) => this.#apply(e)));
	}

	get connection() {
		return this.#events.status;
	}

	/** The session's live stream, for other features (questions, approvals) to listen on. */
	get events(): LiveEvents {
		return this.#events;
	}

	connect(): this {
		this.#events.connect();
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
			if (this.messages[i].rev > m.rev) return;
			this.messages[i] = m;
		} else {
			this.messages.push(m);
			this.messages.sort((a, b) => a.seq - b.seq);
		}
	}

	#apply(e: LiveEvent): void {
		const m = e.message as ChatMessage | undefined;
		if (m && m.sessionId === this.sessionId) this.upsert(m);
	}
}
