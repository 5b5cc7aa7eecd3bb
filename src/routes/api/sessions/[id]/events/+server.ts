import { error } from '@sveltejs/kit';
import { sql } from '$lib/server/db/index';
import { hub } from '$lib/server/realtime/hub';
import { eventStreamResponse, ownerScope, resumeCursor } from '$lib/server/realtime/sse';
import { sessionStreamId } from '$lib/server/realtime/sse-routes';
import { NOT_YOURS, sessionAccess } from '$lib/server/access/sessions';
import type { RequestHandler } from './$types';

/** One session's live updates, including streamed message snapshots. */
export const GET: RequestHandler = async ({ request, url, params, locals }) => {
	// The same id rule as the node fast path's route table, so both serve the same ids.
	const sessionId = sessionStreamId(params.id);
	if (!sessionId) error(400, 'Not a session id.');
	// Another operator's session (not shared): the same 404 as one that does not exist (access/sessions.ts).
	if (!locals.user || !(await sessionAccess(sql(), sessionId, locals.user))) error(404, NOT_YOURS);
	return eventStreamResponse({
		sql: sql(),
		hub: hub(),
		after: resumeCursor(request, url),
		scope: { sessionId, ...ownerScope(locals) },
		signal: request.signal
	});
};
