import type { IncomingMessage, ServerResponse } from 'node:http';
import { SESSION_COOKIE } from '../auth/cookies';
import { sql } from '../db/index';
import { getOperatorBySessionToken, sessionTokenHash } from '../db/queries/operators';
import { hub } from './hub';
import { openEventStream, parseCursor, SSE_HEADERS, type StreamScope } from './sse';

const SESSION_STREAM = /^\/api\/sessions\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/events$/i;

function cookie(req: IncomingMessage, name: string): string | null {
	for (const part of (req.headers.cookie ?? '').split(';')) {
		const [k, ...v] = part.trim().split('=');
		if (k === name) return decodeURIComponent(v.join('='));
	}
	return null;
}

/**
 * Serves the SSE endpoints straight on node's ServerResponse, below SvelteKit (called by
 * server.js). Same streams, same auth as the routes, without a framework request and a web
 * stream per client: each open stream costs a fraction of the memory and CPU per event.
 * Returns false for any other request.
 */
export async function serveNodeSse(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
	if (req.method !== 'GET' || !req.url) return false;
	const url = new URL(req.url, 'http://local');
	let scope: StreamScope;
	if (url.pathname === '/api/events') scope = {};
	else {
		const m = SESSION_STREAM.exec(url.pathname);
		if (!m) return false;
		scope = { sessionId: m[1].toLowerCase() };
	}
	const token = cookie(req, SESSION_COOKIE);
	const user = token ? await getOperatorBySessionToken(token) : null;
	if (!user) {
		res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Sign in first.' }));
		return true;
	}
	scope.operatorId = user.id;
	scope.tokenHash = sessionTokenHash(token!);
	const header = req.headers['last-event-id'];
	const after = parseCursor((Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('after'));
	res.writeHead(200, SSE_HEADERS);
	res.socket?.setNoDelay(true);
	const h = hub();
	const stop = h.detached(() =>
		openEventStream({
			sql: sql(),
			hub: h,
			after,
			scope,
			sink: { write: (b) => void res.write(b), backlog: () => res.writableLength, end: () => res.end() }
		})
	);
	res.once('close', stop);
	return true;
}
