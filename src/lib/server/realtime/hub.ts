import { AsyncResource } from 'node:async_hooks';
import type { Sql } from '../db/index';
import { getMessagesByIds, type MessageRow } from '../db/queries/messages';
import { latestEventId, listEventsAfter, type EventRow } from '../db/queries/events';
import { getExecutionsByIds, type ExecutionRow } from '../db/queries/executions';
import { getPlansByIds, type PlanRow } from '../db/queries/plans';
import { sessionAudiences } from '../db/queries/sessions';
import { logger } from '../log';
import type { SessionSharing } from '../db/schema';

/** Whose a session is (its owner, its sharing): what a stream checks before it carries the session's events. */
export type SessionAudience = { ownerId: string | null; shared: SessionSharing | null };

const log = logger('realtime');

/**
 * An event as sent to browsers: the row, plus snapshots of the message/execution/plan it names,
 * and (never sent) who may see its session (`audience`: access/sessions.ts; absent for fleet events).
 */
export type OutEvent = EventRow & { message?: MessageRow; execution?: ExecutionRow; plan?: PlanRow; audience?: SessionAudience };

export interface Subscriber {
	/** Which events this subscriber wants (and may see: `audience`). */
	accepts(e: OutEvent): boolean;
	deliver(e: OutEvent): void;
	ping(): void;
}

type Listener = (e: EventRow) => void;

/** Subscribers served per event-loop turn when fanning out a batch (see #dispatch). */
const FANOUT_SLICE = 100;

const g = globalThis as unknown as { __nomosHub?: Hub };

/**
 * One LISTEN connection per process, fanned out in memory. On every notification (and after
 * every reconnect of the LISTEN connection) it reads the events after the last one it saw —
 * ids are commit-ordered (see emitEvent) — so a dropped notification loses nothing.
 */
export class Hub {
	#sql: Sql;
	#last = 0;
	#subscribers = new Set<Subscriber>();
	#listeners = new Set<Listener>();
	#fetching: Promise<void> | null = null;
	#again = false;
	#heartbeat: NodeJS.Timeout | undefined;
	#unlisten: (() => Promise<void>) | undefined;
	#listenCount = 0;
	/** The async context the hub was created in (boot, outside any request); see `detached`. */
	#context = new AsyncResource('NomosHub');

	constructor(sql: Sql) {
		this.#sql = sql;
	}

	/**
	 * Runs `fn` in the hub's own async context instead of the caller's. Long-lived objects built
	 * inside a request (an SSE stream) would otherwise carry SvelteKit's AsyncLocalStorage store in
	 * every promise they create, keeping the whole RequestEvent (request, headers, cookies,
	 * closures) alive for as long as the stream stays open.
	 */
	detached<T>(fn: () => T): T {
		return this.#context.runInAsyncScope(fn);
	}

	/**
	 * The id of the last event read from the table. Every later event is still to be read and
	 * reaches the subscribers present when it is dispatched; so a stream that subscribed and is
	 * at this id or beyond has nothing to replay.
	 */
	get lastId(): number {
		return this.#last;
	}

	/** How many times the LISTEN was (re-)established; for tests. */
	get listenCount() {
		return this.#listenCount;
	}

	async start(): Promise<void> {
		let ready = false;
		const res = await this.#sql.listen(
			'nomos_events',
			() => ready && this.#catchUp(),
			() => {
				this.#listenCount++;
				// A re-established LISTEN may have missed notifications: read what came since.
				if (ready) this.#catchUp();
			}
		);
		// LISTEN is active: every event after this id is read by #catchUp.
		this.#last = await latestEventId(this.#sql);
		ready = true;
		this.#catchUp();
		this.#unlisten = () => res.unlisten();
		this.#heartbeat = setInterval(() => {
			for (const s of this.#subscribers) s.ping();
		}, 15_000);
		this.#heartbeat.unref();
	}

	async stop(): Promise<void> {
		clearInterval(this.#heartbeat);
		await this.#unlisten?.().catch(() => undefined);
		this.#subscribers.clear();
		this.#listeners.clear();
	}

	subscribe(s: Subscriber): () => void {
		this.#subscribers.add(s);
		return () => void this.#subscribers.delete(s);
	}

	/** In-process listeners (e.g. turn cancellation); called for every event, in order. */
	onEvent(fn: Listener): () => void {
		this.#listeners.add(fn);
		return () => void this.#listeners.delete(fn);
	}

	get subscriberCount() {
		return this.#subscribers.size;
	}

	#catchUp(): void {
		if (this.#fetching) {
			this.#again = true;
			return;
		}
		this.#fetching = (async () => {
			do {
				this.#again = false;
				let batch: EventRow[];
				do {
					batch = await listEventsAfter(this.#sql, this.#last, { limit: 500 });
					if (batch.length === 0) break;
					this.#last = batch[batch.length - 1].id;
					await this.#dispatch(batch);
				} while (batch.length === 500);
			} while (this.#again);
		})()
			.catch((e) => {
				log.error({ err: e }, (e as Error).message);
				this.#again = false;
			})
			.finally(() => {
				this.#fetching = null;
			});
	}

	async #dispatch(batch: EventRow[]): Promise<void> {
		for (const e of batch) for (const l of this.#listeners) l(e);
		if (this.#subscribers.size === 0) return;
		const out = await enrich(this.#sql, batch);
		// In slices, yielding to the event loop in between: the sockets of one slice are written
		// (their writes flush on the next tick) while the next slice is prepared, instead of every
		// client waiting for the JavaScript work of the whole fan-out. A subscriber that joins
		// during a yield is not in `subs`, and needs not be: it subscribed after these events were
		// committed, so its replay from the table carries them.
		const subs = [...this.#subscribers];
		for (let i = 0; i < subs.length; i += FANOUT_SLICE) {
			if (i > 0) await new Promise((r) => setImmediate(r));
			for (const s of subs.slice(i, i + FANOUT_SLICE)) for (const e of out) if (s.accepts(e)) s.deliver(e);
		}
	}
}

/** Attaches current snapshots of the messages, executions and plans the batch names (one query each). */
export async function enrich(sql: Sql, batch: EventRow[]): Promise<OutEvent[]> {
	const ids = (key: string, types?: string[]) => [
		...new Set(batch.filter((e) => typeof e.payload[key] === 'string' && (!types || types.includes(e.type))).map((e) => String(e.payload[key])))
	];
	const sessionIds = [...new Set(batch.map((e) => e.sessionId).filter((x): x is string => !!x))];
	const [messages, executions, plans, audiences] = await Promise.all([
		getMessagesByIds(sql, ids('messageId', ['message.updated'])),
		getExecutionsByIds(sql, ids('executionId')),
		getPlansByIds(sql, ids('planId')),
		sessionAudiences(sql, sessionIds)
	]);
	const a = new Map(audiences.map((r) => [r.id, { ownerId: r.ownerId, shared: r.shared }]));
	const m = new Map(messages.map((x) => [x.id, x]));
	const x = new Map(executions.map((r) => [r.id, r]));
	const p = new Map(plans.map((r) => [r.id, r]));
	return batch.map((e) => {
		// A session gone from the table (never, as sessions are only marked deleted) is nobody's: admins only.
		const out: OutEvent = e.sessionId ? { ...e, audience: a.get(e.sessionId) ?? { ownerId: null, shared: null } } : { ...e };
		if (e.type === 'message.updated') out.message = m.get(String(e.payload.messageId));
		if (typeof e.payload.executionId === 'string') out.execution = x.get(e.payload.executionId);
		if (typeof e.payload.planId === 'string') out.plan = p.get(e.payload.planId);
		return out;
	});
}

export function setHub(hub: Hub | undefined): void {
	g.__nomosHub = hub;
}

export function hub(): Hub {
	if (!g.__nomosHub) throw new Error('realtime hub not started');
	return g.__nomosHub;
}
