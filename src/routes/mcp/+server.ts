import { json } from '@sveltejs/kit';
import { handleMcpRequest } from '$lib/server/mcp/server';
import { mcpRebindingRefusal } from '$lib/server/mcp/host-check';
import { env } from '$lib/server/env';
import type { RequestHandler } from './$types';

const NEEDS_TOKEN = { message: 'MCP needs an API token: send Authorization: Bearer <token> (create one in Settings).' };

/** Nomos as an MCP server (Streamable HTTP, stateless): for API tokens only, never a browser's cookie. */
export const POST: RequestHandler = async ({ request, url, locals }) => {
	const refused = mcpRebindingRefusal(request, url, env().ORIGIN);
	if (refused) return json({ message: refused.message }, { status: refused.status });
	if (!locals.user || !locals.apiToken) return json(NEEDS_TOKEN, { status: 401, headers: { 'www-authenticate': 'Bearer' } });
	return handleMcpRequest(request, { user: locals.user, token: locals.apiToken });
};

/** Stateless: no standalone event stream and no session to end. */
const notHere: RequestHandler = () =>
	json({ message: 'POST JSON-RPC messages to /mcp (stateless Streamable HTTP).' }, { status: 405, headers: { allow: 'POST' } });
export const GET = notHere;
export const DELETE = notHere;
