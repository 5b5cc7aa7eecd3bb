import { getContext, setContext } from 'svelte';
import { goto } from '$app/navigation';
import { noticePath, noticeWords } from '$lib/schemas/notifications';
import type { LiveEvent, LiveEvents } from './live-events.svelte';
import type { RequestCause } from '$lib/types/executions';

const KEY = Symbol('browser-notifier');
/** This browser's choice to stay quiet although permission was granted. */
const OFF_KEY = 'nomos.notifications';
/** Tabs of one browser tell each other which waits one of them shows on screen. */
const CHANNEL = 'nomos-notify';
/**
 * How long a tab waits for another tab to say it is showing that chat before it notifies. A tab
 * not looking asks the others at once, and they answer from what they show now, whether or not
 * their own stream has delivered the event yet (two streams can be seconds apart on a busy machine).
 * An answer that comes later still withdraws the notice (a busy tab can answer late).
 */
const SETTLE_MS = 1000;
/** One tab notifies per wait: it holds the wait's Web Lock this long, the others find it taken. */
const CLAIM_MS = 30_000;

type Permission = NotificationPermission | 'unsupported';
type Wait = { key: string; sessionId: string | null; title: string; text: string; path: string };

const supported = () => typeof window !== 'undefined' && 'Notification' in window;

/**
 * Browser notifications for approvals, plans and questions that start waiting while the operator
 * is not looking at their chat (tab hidden, or another page open). Fed by the fleet stream (the
 * one event path); permission is asked only from a button (`ask`), never on its own.
 */
export class BrowserNotifier {
	#permission = $state<Permission>('unsupported');
	#off = $state(false);
	#channel: BroadcastChannel | null = null;
	#path: () => string = () => '';
	// eslint-disable-next-line svelte/prefer-svelte-reactivity -- bookkeeping, nothing renders from it
	#seen = new Set<string>();
	/** The notices this tab shows, by wait: one another tab then says it shows on screen is closed. */
	// eslint-disable-next-line svelte/prefer-svelte-reactivity -- bookkeeping, nothing renders from it
	#shown = new Map<string, Notification>();

	constructor() {
		if (!supported()) return;
		this.#permission = Notification.permission;
		this.#off = localStorage.getItem(OFF_KEY) === 'off';
	}

	get permission(): Permission {
		return this.#permission;
	}

	/** Notifications are on in this browser: granted and not turned off here. */
	get on(): boolean {
		return this.#permission === 'granted' && !this.#off;
	}

	/** Asks the browser for permission (from a click only), and turns notifications on here. */
	async ask(): Promise<void> {
		if (!supported()) return;
		this.setOff(false);
		this.#permission = await Notification.requestPermission();
	}

	setOff(off: boolean): void {
		this.#off = off;
		if (off) localStorage.setItem(OFF_KEY, 'off');
		else localStorage.removeItem(OFF_KEY);
	}

	/** Follows the fleet stream; `path` is the page this tab shows. Returns the unsubscribe function. */
	follow(events: LiveEvents, path: () => string): () => void {
		if (!supported()) return () => undefined;
		this.#path = path;
		if (typeof BroadcastChannel !== 'undefined') {
			this.#channel = new BroadcastChannel(CHANNEL);
			this.#channel.onmessage = (m: MessageEvent<{ seen?: string; ask?: string; sessionId?: string | null }>) => {
				if (typeof m.data?.seen === 'string') {
					this.#seen.add(m.data.seen);
					this.#withdraw(m.data.seen);
				}
				if (typeof m.data?.ask === 'string' && this.#looking(m.data.sessionId ?? null, this.#path())) {
					this.#channel?.postMessage({ seen: m.data.ask });
				}
			};
		}
		const offs = [
			events.on('execution.updated', (e) => this.#consider(waitOf(e), path())),
			events.on('question.raised', (e) => this.#consider(waitOf(e), path())),
			events.on('plan.updated', (e) => this.#consider(waitOf(e), path()))
		];
		return () => {
			offs.forEach((off) => off());
			this.#channel?.close();
			this.#channel = null;
		};
	}

	#consider(w: Wait | null, path: string): void {
		if (!w || !this.on) return;
		if (this.#looking(w.sessionId, path)) {
			this.#seen.add(w.key);
			this.#channel?.postMessage({ seen: w.key });
			return;
		}
		this.#channel?.postMessage({ ask: w.key, sessionId: w.sessionId });
		setTimeout(() => {
			if (this.#seen.has(w.key)) return;
			const locks = typeof navigator !== 'undefined' ? navigator.locks : undefined;
			if (!locks) return this.#show(w);
			void locks.request(`nomos-notify:${w.key}`, { ifAvailable: true }, async (lock) => {
				if (!lock) return;
				this.#show(w);
				await new Promise((r) => setTimeout(r, CLAIM_MS));
			});
		}, SETTLE_MS);
	}

	/** This tab shows that chat (or Ops, for a wait without one) on screen now. */
	#looking(sessionId: string | null, path: string): boolean {
		return document.visibilityState === 'visible' && (sessionId ? path === `/chat/${sessionId}` : path === '/ops');
	}

	#show(w: Wait): void {
		this.#seen.add(w.key);
		const n = new Notification(w.title, { body: w.text.slice(0, 300), tag: w.key });
		this.#shown.set(w.key, n);
		n.onclose = () => this.#shown.delete(w.key);
		n.onclick = () => {
			window.focus();
			this.#withdraw(w.key);
			void goto(w.path).then(() => reveal(w.path));
		};
	}

	#withdraw(key: string): void {
		this.#shown.get(key)?.close();
		this.#shown.delete(key);
	}
}

/** What waits, from an event of the fleet stream; null when the event starts no wait. */
function waitOf(e: LiveEvent): Wait | null {
	if (e.type === 'execution.updated') {
		const x = e.execution as
			{ id: string; status: string; action: string; target: string; reason: string; commandPreview: string; cause?: RequestCause | null } | undefined;
		if (!e.payload.created || x?.status !== 'awaiting_approval') return null;
		return { key: `execution:${x.id}`, sessionId: e.sessionId, ...noticeWords.approval(x), path: noticePath('approval', e.sessionId, x.id) };
	}
	if (e.type === 'question.raised' && e.sessionId && typeof e.payload.questionId === 'string') {
		const prompt = typeof e.payload.prompt === 'string' ? e.payload.prompt : 'A question waits for you.';
		return {
			key: `question:${e.payload.questionId}`,
			sessionId: e.sessionId,
			...noticeWords.question({ prompt }),
			path: noticePath('question', e.sessionId, e.payload.questionId)
		};
	}
	if (e.type === 'plan.updated' && e.sessionId) {
		const p = e.plan as { id: string; status: string; title: string; steps: Array<{ executionId: string | null }>; cause?: RequestCause | null } | undefined;
		// A plan that ended (not each of its steps) is news too.
		if (p && typeof e.payload.finished === 'string')
			return { key: `plan-end:${p.id}`, sessionId: e.sessionId, ...noticeWords.planEnd(p), path: noticePath('plan', e.sessionId, p.id) };
		if (!p || p.status !== 'proposed' || e.payload.decision) return null;
		return { key: `plan:${p.id}`, sessionId: e.sessionId, ...noticeWords.plan(p), path: noticePath('plan', e.sessionId, p.id) };
	}
	return null;
}

/** Scrolls the card a notice names into view once the page shows it. */
function reveal(path: string): void {
	const id = path.split('#')[1];
	if (!id) return;
	const until = Date.now() + 5000;
	const tick = () => {
		const el = document.getElementById(id);
		if (el) el.scrollIntoView({ block: 'center' });
		else if (Date.now() < until) setTimeout(tick, 100);
	};
	tick();
}

export function setBrowserNotifier(n: BrowserNotifier): BrowserNotifier {
	return setContext(KEY, n);
}

export function browserNotifier(): BrowserNotifier {
	return getContext<BrowserNotifier>(KEY);
}
