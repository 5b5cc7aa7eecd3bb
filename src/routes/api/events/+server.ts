import { sql } from '$lib/server/db/index';
import { hub } from '$lib/server/realtime/hub';
import { eventStreamResponse, ownerScope, resumeCursor } from '$lib/server/realtime/sse';
import type { RequestHandler } from './$types';

/** Fleet-wide live updates (sessions list, approvals, executions, questions). */
export const GET: RequestHandler = ({ request, url, locals }) =>
	eventStreamResponse({ sql: sql(), hub: hub(), after: resumeCursor(request, url), scope: ownerScope(locals), signal: request.signal });
