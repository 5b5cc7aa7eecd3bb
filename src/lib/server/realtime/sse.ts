import type { Sql } from '../db/index';
import { listEventsAfter, prunedThrough, type EventRow } from '../db/queries/events';
import { sessionTokenHash } from '../db/queries/operators';
import { enrich, type Hub, type OutEvent } from './hub';
import { accessOf, type Viewer } from '../access/sessions';
import { logger } from '../log';
import { isEventType, type EventType } from '../../schemas/events';

const log = logger('realtime');

/** Event types that only session streams carry (token-rate updates). */
export const SESSION_ONLY_TYPES: EventType[] = ['message.updated', 'message.delta'];

export interface StreamScope {
	sessionId?: string;
	/**
	 * Who reads the stream: it carries only the events of sessions they may read (access/sessions.ts),
	 * and fleet events. Without one (a stream no operator opened) it carries no session's events.
	 */
	viewer?: Viewer;
	/** Whose stream this is: an `auth.revoked` naming them (and not this sign-in) closes it. */
	operatorId?: string;
	tokenHash?: string;
}

/** What stands for an API token in a stream's scope (and in the `auth.revoked` that revokes it). */
export const apiTokenStreamKey = (tokenId: string) => `api_token:${tokenId}`;

/** The stream scope part that ties a stream to the signed-in operator (`locals`, or `authenticate()` on the fast path). */
export function ownerScope(auth: { user: Viewer | null; sessionToken: string | null; apiToken?: { id: string } | null }): StreamScope {
	const viewer = auth.user ? { id: auth.user.id, role: auth.user.role } : undefined;
	if (auth.user && auth.apiToken) return { viewer, operatorId: auth.user.id, tokenHash: apiTokenStreamKey(auth.apiToken.id) };
	return auth.user && auth.sessionToken ? { viewer, operatorId: auth.user.id, tokenHash: sessionTokenHash(auth.sessionToken) } : { viewer };
}

/** Whether the stream's reader may see this event: a fleet event, or one of a session they may read. */
function visible(e: OutEvent, scope: StreamScope): boolean {
	if (!e.sessionId) return true;
	return !!scope.viewer && !!e.audience && accessOf(scope.viewer, e.audience) !== null;
}

/** Sent instead of a replay that would have a gap (the events were pruned): the client reloads. */
export const RESET = 'stream.reset';

/** Revocations are never sent to clients; they end the streams of the operator they name. */
const REVOKED: EventType = 'auth.revoked';

/** An `auth.revoked` ends the operator's streams but the one it `keep`s, or only the one it names (`only`: a revoked API token). */
function revokes(e: EventRow, scope: StreamScope): boolean {
	if (e.type !== REVOKED || !scope.operatorId || e.payload.operatorId !== scope.operatorId) return false;
	return e.payload.only ? e.payload.only === scope.tokenHash : e.payload.keep !== scope.tokenHash;
}

const encoder = new TextEncoder();
/** A client this far behind (bytes queued) is dropped; it reconnects and replays. */
const MAX_QUEUED_BYTES = 4 * 1024 * 1024;

/** Types not in schemas/events.ts already logged (once per process each). */
const unknownTypes = new Set<string>();

/**
 * Whether a stream may carry this event: its type must be one the registry (schemas/events.ts)
 * names, so a browser only ever gets a payload of a known shape. A row of another type (written
 * by hand, by a newer or an older version) is skipped, and said once.
 */
function known(e: EventRow): boolean {
	if (isEventType(e.type)) return true;
	if (!unknownTypes.has(e.type)) {
		unknownTypes.add(e.type);
		log.warn({ type: e.type, id: e.id }, `event ${e.id} has an unknown type "${e.type}": not streamed`);
	}
	return false;
}

/** One event as SSE lines; refuses (throws) a type that schemas/events.ts does not name. */
export function formatEvent(e: OutEvent): string {
	if (!isEventType(e.type)) throw new Error(`unknown event type "${e.type}": not in schemas/events.ts`);
	// A delta is the bulk of a streaming turn's traffic: it carries only its payload; the id and
	// type are the SSE lines' (the client reads them from there, see LiveEvents).
	if (e.type === 'message.delta') return `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ payload: e.payload })}\n\n`;
	const data = JSON.stringify({
		id: e.id,
		sessionId: e.sessionId,
		type: e.type,
		payload: e.payload,
		message: e.message,
		execution: e.execution,
		plan: e.plan,
		createdAt: e.createdAt
	});
	return `id: ${e.id}\nevent: ${e.type}\ndata: ${data}\n\n`;
}

/** Encoded events by object: the hub hands the same OutEvent to every stream, so it is serialised once, not once per client. */
const encoded = new WeakMap<OutEvent, Uint8Array>();

function eventBytes(e: OutEvent): Uint8Array {
	let bytes = encoded.get(e);
	if (!bytes) {
		bytes = encoder.encode(formatEvent(e));
		encoded.set(e, bytes);
	}
	return bytes;
}

/** The cursor a (re)connecting client resumes after: Last-Event-ID wins over `?after=`. */
export function resumeCursor(request: Request, url: URL): number {
	return parseCursor(request.headers.get('last-event-id') ?? url.searchParams.get('after'));
}

/** An event id to resume after; anything that is not a non-negative integer means "from now". */
export function parseCursor(raw: string | null | undefined): number {
	const n = Number(raw ?? '0');
	return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** Where an event stream writes: a web ReadableStream or a node ServerResponse. */
export interface StreamSink {
	write(bytes: Uint8Array): void;
	/** Bytes written but not yet sent to the client. */
	backlog(): number;
	end(): void;
}

/**
 * Streams events to one client: subscribe to the hub (buffering) → replay what came after
 * `after` from the table → flush the buffer, skipping any id already sent; so nothing is lost or
 * sent twice. A client more than MAX_QUEUED_BYTES behind is dropped (it reconnects and replays).
 * Returns the function that stops the stream.
 */
export function openEventStream(opts: { sql: Sql; hub: Hub; after: number; scope: StreamScope; sink: StreamSink }): () => void {
	const { sql, hub, scope, sink } = opts;
	let lastSent = opts.after;
	let live = false;
	let closed = false;
	const buffer: OutEvent[] = [];
	const accepts = (e: OutEvent) =>
		e.type === REVOKED
			? revokes(e, scope)
			: (scope.sessionId ? e.sessionId === scope.sessionId : !(SESSION_ONLY_TYPES as string[]).includes(e.type)) && known(e) && visible(e, scope);
	const stop = () => {
		if (closed) return;
		closed = true;
		unsubscribe();
	};
	const close = () => {
		if (closed) return;
		stop();
		sink.end();
	};
	const enqueue = (bytes: Uint8Array) => {
		if (closed) return;
		if (sink.backlog() > MAX_QUEUED_BYTES) return close();
		sink.write(bytes);
	};
	const write = (text: string) => enqueue(encoder.encode(text));
	const send = (e: OutEvent) => {
		if (e.type === REVOKED) return close();
		if (e.id <= lastSent) return;
		lastSent = e.id;
		enqueue(eventBytes(e));
	};
	const unsubscribe = hub.subscribe({
		accepts,
		deliver: (e) => (live ? send(e) : buffer.push(e)),
		ping: () => write(': ping\n\n')
	});
	write('retry: 1000\n\n');
	void (async () => {
		// Subscribed before this check: a client already at the hub's last id (the usual case for
		// a reconnect or a fresh page) gets everything newer from the hub, so no replay query.
		if (lastSent < hub.lastId) {
			try {
				// Older than what is kept: replaying would leave a gap, so the client reloads instead.
				if (lastSent > 0 && lastSent < (await prunedThrough(sql))) {
					write(`event: ${RESET}\ndata: {"reason":"events older than the retained range"}\n\n`);
					return close();
				}
				let batch: EventRow[];
				do {
					batch = await listEventsAfter(sql, lastSent, {
						sessionId: scope.sessionId,
						excludeTypes: scope.sessionId ? [REVOKED] : [...SESSION_ONLY_TYPES, REVOKED],
						limit: 500
					});
					for (const e of await enrich(sql, collapseMessageUpdates(batch.filter(known)))) if (visible(e, scope)) send(e);
					if (batch.length) lastSent = Math.max(lastSent, batch[batch.length - 1].id);
				} while (batch.length === 500 && !closed);
			} catch (e) {
				log.error({ err: e }, `event replay failed: ${(e as Error).message}`);
				return close();
			}
		}
		for (const e of buffer.splice(0)) send(e);
		live = true;
		write(': live\n\n');
	})();
	return stop;
}

export const SSE_HEADERS = {
	'content-type': 'text/event-stream; charset=utf-8',
	'cache-control': 'no-cache, no-transform',
	connection: 'keep-alive',
	'x-accel-buffering': 'no'
} as const;

/** The event stream as a SvelteKit (web) Response: used by the routes under `vite dev`. */
export function eventStreamResponse(opts: { sql: Sql; hub: Hub; after: number; scope: StreamScope; signal: AbortSignal }): Response {
	let stop = () => undefined as void;
	const source: UnderlyingDefaultSource<Uint8Array> = {
		start(controller) {
			let ended = false;
			stop = openEventStream({
				...opts,
				sink: {
					write: (bytes) => controller.enqueue(bytes),
					backlog: () => -(controller.desiredSize ?? 0),
					end: () => {
						if (ended) return;
						ended = true;
						try {
							controller.close();
						} catch {
							/* already closed */
						}
					}
				}
			});
			opts.signal.addEventListener('abort', () => stop(), { once: true });
		},
		cancel() {
			stop();
		}
	};
	// Built in the hub's async context, not the request's (see Hub.detached): an open stream then
	// keeps only itself alive, not the request that opened it.
	const stream = opts.hub.detached(() => new ReadableStream<Uint8Array>(source, new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 })));
	return new Response(stream, { headers: SSE_HEADERS });
}

/** In a replay, only the last `message.updated` of each message matters (it carries the current snapshot). */
function collapseMessageUpdates(batch: EventRow[]): EventRow[] {
	const lastIndex = new Map<string, number>();
	batch.forEach((e, i) => {
		if (e.type === 'message.updated') lastIndex.set(String(e.payload.messageId), i);
	});
	return batch.filter((e, i) => e.type !== 'message.updated' || lastIndex.get(String(e.payload.messageId)) === i);
}
