// tRPC callers as the app's handler makes them (hooks.server.ts → trpc/context.ts), for tests that
// call procedures in this process: a signed-in browser tab, or a request made with an API token.
import type { RequestEvent } from '@sveltejs/kit';
import type { ApiTokenAuth } from '../../src/lib/server/db/queries/api-tokens';
import type { Operator } from '../../src/lib/server/db/queries/operators';
import { authenticate } from '../../src/lib/server/auth/session';
import { appRouter } from '../../src/lib/server/trpc/router';
import { createCallerFactory } from '../../src/lib/server/trpc/t';

export const BASE = 'http://127.0.0.1:3000';

/** The caller of a browser tab whose session cookie is `cookie`, clicking on `page` (its referer), from `address`. */
export async function sessionCaller(cookie: string, o: { page?: string; address?: string } = {}) {
	const auth = await authenticate(`nomos_session=${cookie}`);
	const event = {
		url: new URL(`${BASE}/trpc/x`),
		request: new Request(`${BASE}/trpc/x`, { method: 'POST', headers: o.page ? { referer: `${BASE}${o.page}` } : {} }),
		getClientAddress: () => o.address ?? '192.0.2.10',
		locals: { user: auth.user, sessionToken: cookie, sessionVerifiedAt: auth.sessionVerifiedAt ?? null, apiToken: null }
	};
	return createCallerFactory(appRouter)({ user: auth.user, apiToken: null, event: event as unknown as RequestEvent });
}

/** The caller of a request made with API token `token` of `user` (REST, a script). */
export function tokenCaller(user: Operator, token: ApiTokenAuth) {
	const event = {
		url: new URL(`${BASE}/trpc/x`),
		request: new Request(`${BASE}/trpc/x`),
		getClientAddress: () => '192.0.2.20',
		locals: { sessionToken: null, apiToken: token }
	};
	return createCallerFactory(appRouter)({ user, apiToken: token, event: event as unknown as RequestEvent });
}
