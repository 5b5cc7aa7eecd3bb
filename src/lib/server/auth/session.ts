import { sql } from '../db/index';
import { getAuthSession, type Operator } from '../db/queries/operators';
import { operatorByApiToken, type ApiTokenAuth } from '../db/queries/api-tokens';
import { sessionTokenFrom } from './cookies';

/** Who sent a request: the shape of `App.Locals`. */
export interface RequestAuth {
	user: Operator | null;
	/** The token from the cookie, even when it no longer names a session (logout deletes it). */
	sessionToken: string | null;
	/** When the cookie's session last gave the password (sign-in or step-up); null without one. */
	sessionVerifiedAt?: string | null;
	/** Set when the request was authenticated by an API token (`Authorization: Bearer`), not a cookie. */
	apiToken?: ApiTokenAuth;
}

/** What an API request without a valid session gets, with status 401. */
export const SIGN_IN_FIRST = { message: 'Sign in first.' } as const;

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerTokenFrom(authorization: string | null | undefined): string | null {
	const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
	return m ? m[1] : null;
}

/**
 * The one sign-in check, for every request whichever server answers it: `hooks.server.ts`
 * (pages, tRPC, the SvelteKit SSE routes under `vite dev`) and the node SSE fast path
 * (`realtime/node-sse.ts`). A user only for a known, unexpired session of an enabled operator,
 * or, for a request without a session cookie, a valid API token. A request carrying both is a
 * cookie request (the Origin check applies to it), whatever the token says.
 */
export async function authenticate(cookieHeader: string | null | undefined, authorization?: string | null): Promise<RequestAuth> {
	const sessionToken = sessionTokenFrom(cookieHeader);
	if (sessionToken) {
		const s = await getAuthSession(sql(), sessionToken);
		return { sessionToken, user: s?.user ?? null, sessionVerifiedAt: s?.verifiedAt ?? null };
	}
	const bearer = bearerTokenFrom(authorization);
	const found = bearer ? await operatorByApiToken(sql(), bearer) : null;
	return found ? { sessionToken: null, user: found.user, apiToken: found.token } : { sessionToken: null, user: null };
}
