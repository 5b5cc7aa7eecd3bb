import type { IncomingMessage, ServerResponse } from 'node:http';
import { authenticate, SIGN_IN_FIRST } from '../auth/session';
import { sql } from '../db/index';
import { hub } from './hub';
import { openEventStream, ownerScope, parseCursor, SSE_HEADERS } from './sse';
import { matchSseRoute, type SseRoute } from './sse-routes';
import { NOT_YOURS, sessionAccess } from '../access/sessions';

/**
 * Serves the SSE endpoints straight on node's ServerResponse, below SvelteKit (called by
 * server.js for every request). Same streams, same `authenticate` as the routes, without a
 * framework request and a web stream per client: each open stream costs a fraction of the memory
 * and CPU per event. Returns null at once, without touching the response, for any request the
 * route table (sse-routes.ts) does not match: SvelteKit answers those.
 */
export function serveNodeSse(req: IncomingMessage, res: ServerResponse): Promise<void> | null {
	const route = matchSseRoute(req.method, req.url);
	return route ? stream(req, res, route) : null;
}

async function stream(req: IncomingMessage, res: ServerResponse, route: SseRoute): Promise<void> {
	// The client may leave while the session is looked up: then no stream is opened at all.
	let gone = false;
	const leave = () => (gone = true);
	res.once('close', leave);
	const auth = await authenticate(req.headers.cookie, req.headers.authorization);
	res.off('close', leave);
	if (gone) return;
	if (!auth.user) {
		const body = JSON.stringify(SIGN_IN_FIRST);
		res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
		return;
	}
	// Another operator's session (not shared): the same 404 as one that does not exist (access/sessions.ts).
	if (route.sessionId && !(await sessionAccess(sql(), route.sessionId, auth.user))) {
		if (gone) return;
		const body = JSON.stringify({ message: NOT_YOURS });
		res.writeHead(404, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
		return;
	}
	const header = req.headers['last-event-id'];
	const after = parseCursor((Array.isArray(header) ? header[0] : header) ?? new URLSearchParams(route.search).get('after'));
	res.writeHead(200, SSE_HEADERS);
	res.socket?.setNoDelay(true);
	const h = hub();
	const stop = h.detached(() =>
		openEventStream({
			sql: sql(),
			hub: h,
			after,
			scope: { sessionId: route.sessionId, ...ownerScope(auth) },
			sink: { write: (b) => void res.write(b), backlog: () => res.writableLength, end: () => res.end() }
		})
	);
	res.once('close', stop);
}
