import { error } from '@sveltejs/kit';
import { z } from 'zod';
import { sql } from '$lib/server/db/index';
import { hub } from '$lib/server/realtime/hub';
import { eventStreamResponse, ownerScope, resumeCursor } from '$lib/server/realtime/sse';
import type { RequestHandler } from './$types';

/** One session's live updates, including streamed message snapshots. */
export const GET: RequestHandler = ({ request, url, params, locals }) => {
	const id = z.uuid().safeParse(params.id);
	if (!id.success) error(400, 'Not a session id.');
	return eventStreamResponse({ sql: sql(), hub: hub(), after: resumeCursor(request, url), scope: { sessionId: id.data, ...ownerScope(locals) }, signal: request.signal });
};
