/**
 * The SSE endpoints that `node server.js` serves below SvelteKit (realtime/node-sse.ts). The same
 * paths are SvelteKit routes (`src/routes/api/events`, `src/routes/api/sessions/[id]/events`),
 * which answer under `vite dev` and any request this table does not match exactly.
 */

/** A session id as the stream routes take it: a UUID in hex, any case (Postgres reads it so). */
const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const SESSION_ID = new RegExp(`^${UUID}$`);

/** One stream request: the session it is scoped to (none: the fleet stream) and its query. */
export interface SseRoute {
	sessionId?: string;
	/** The query string without its `?` (it may carry `after=`). */
	search: string;
}

const ROUTES: ReadonlyArray<{ path: RegExp; route: (m: RegExpExecArray) => Omit<SseRoute, 'search'> }> = [
	{ path: /^\/api\/events$/, route: () => ({}) },
	{ path: new RegExp(`^/api/sessions/(${UUID})/events$`), route: (m) => ({ sessionId: m[1].toLowerCase() }) }
];

/**
 * The stream a request asks for, or null: GET only, the path compared whole against the table
 * (no prefix, suffix or substring match). `url` is node's raw request target (`/path?query`):
 * anything else (`*`, absolute form, an encoded path) is SvelteKit's to answer.
 */
export function matchSseRoute(method: string | undefined, url: string | undefined): SseRoute | null {
	if (method !== 'GET' || !url) return null;
	const q = url.indexOf('?');
	const path = q === -1 ? url : url.slice(0, q);
	for (const r of ROUTES) {
		const m = r.path.exec(path);
		if (m) return { ...r.route(m), search: q === -1 ? '' : url.slice(q + 1) };
	}
	return null;
}

/** The `[id]` of a session stream route as the table reads it (lower case), or null. */
export function sessionStreamId(param: string): string | null {
	return SESSION_ID.test(param) ? param.toLowerCase() : null;
}
