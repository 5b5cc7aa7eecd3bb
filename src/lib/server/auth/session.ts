import { sql } from '../db/index';
import { getOperatorBySessionToken, type Operator } from '../db/queries/operators';
import { sessionTokenFrom } from './cookies';

/** Who sent a request: the shape of `App.Locals`. */
export interface RequestAuth {
	user: Operator | null;
	/** The token from the cookie, even when it no longer names a session (logout deletes it). */
	sessionToken: string | null;
}

/** What an API request without a valid session gets, with status 401. */
export const SIGN_IN_FIRST = { message: 'Sign in first.' } as const;

/**
 * The one sign-in check, for every request whichever server answers it: `hooks.server.ts`
 * (pages, tRPC, the SvelteKit SSE routes under `vite dev`) and the node SSE fast path
 * (`realtime/node-sse.ts`). A user only for a known, unexpired session of an enabled operator.
 */
export async function authenticate(cookieHeader: string | null | undefined): Promise<RequestAuth> {
	const sessionToken = sessionTokenFrom(cookieHeader);
	return { sessionToken, user: sessionToken ? await getOperatorBySessionToken(sql(), sessionToken) : null };
}
