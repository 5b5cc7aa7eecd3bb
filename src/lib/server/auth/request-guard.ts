import { sessionTokenFrom } from './cookies';
import { isApiPath, isCrossOrigin, isHookPath, isPublicPath, isSafeMethod } from './guard';
import { authenticate, SIGN_IN_FIRST, type RequestAuth } from './session';

export const CROSS_ORIGIN = { message: 'Cross-origin request refused.' } as const;
export const READ_ONLY_TOKEN = {
	message: 'This API token has scope read: it may only read (queries and event streams). Create an operate token to change things.'
} as const;

/** Paths that check a read token's scope themselves, per call (the MCP endpoint's reads are POSTs). */
const OWN_SCOPE_CHECK = new Set(['/mcp']);

export type GuardOutcome =
	{ kind: 'pass'; auth: RequestAuth } | { kind: 'refuse'; status: 401 | 403; body: { message: string } } | { kind: 'sign-in'; auth: RequestAuth };

/**
 * Who may send this request, before any route sees it (hooks.server.ts):
 * - a request with the session cookie is a browser's: a state-changing one must come from the
 *   app's own origin (403), also when it carries a bearer token too;
 * - one without the cookie carries no ambient credential, so no Origin is needed: with a valid
 *   API token it acts as the token's operator, without credentials it gets 401 (pages: sign-in);
 * - a read-scoped token may not change anything (403), except where the route checks per call.
 * Public paths (sign-in, setup) keep the Origin check whatever they carry. Alert hooks carry
 * their own secret and pass with no one signed in (isHookPath).
 */
export async function guardRequest(request: Request, url: URL): Promise<GuardOutcome> {
	const cookie = request.headers.get('cookie');
	const path = url.pathname;
	// A monitoring system's delivery: no one signs in, the route checks the hook's secret.
	if (isHookPath(path) && request.method === 'POST') return { kind: 'pass', auth: { sessionToken: null, user: null } };
	if ((sessionTokenFrom(cookie) || isPublicPath(path)) && isCrossOrigin(request, url)) {
		return { kind: 'refuse', status: 403, body: CROSS_ORIGIN };
	}
	const auth = await authenticate(cookie, request.headers.get('authorization'));
	if (!auth.user && !isPublicPath(path)) {
		if (isApiPath(path) || request.method !== 'GET') return { kind: 'refuse', status: 401, body: SIGN_IN_FIRST };
		return { kind: 'sign-in', auth };
	}
	if (auth.apiToken?.scope === 'read' && !isSafeMethod(request.method) && !OWN_SCOPE_CHECK.has(path)) {
		return { kind: 'refuse', status: 403, body: READ_ONLY_TOKEN };
	}
	return { kind: 'pass', auth };
}
