import { error } from '@sveltejs/kit';

/** Paths reachable without signing in (the probes say only up / ready and which check failed). */
export function isPublicPath(pathname: string): boolean {
	return (
		pathname === '/login' ||
		pathname === '/setup' ||
		pathname.startsWith('/_app/') ||
		pathname === '/favicon.svg' ||
		pathname === '/healthz' ||
		pathname === '/readyz'
	);
}

/**
 * Alert hooks (`POST /api/hooks/<uuid>`): the hook's own secret is their credential, checked by the
 * route. Only that exact shape, so no other route is reachable through it; no cookie is used there.
 */
export function isHookPath(pathname: string): boolean {
	return /^\/api\/hooks\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(pathname);
}

/** Requests answered with a status instead of a redirect to /login. */
export function isApiPath(pathname: string): boolean {
	return pathname.startsWith('/trpc') || pathname.startsWith('/api/') || pathname === '/mcp';
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Methods that change nothing (what a read-scoped API token may send). */
export function isSafeMethod(method: string): boolean {
	return SAFE.has(method);
}

/**
 * Any state-changing request must come from the app's own origin. SvelteKit's own check covers
 * only form content types; this one covers JSON, text/plain and everything else too. Applied to
 * requests that carry the session cookie (and to public paths): see auth/request-guard.ts.
 */
export function isCrossOrigin(request: Request, url: URL): boolean {
	if (SAFE.has(request.method)) return false;
	const origin = request.headers.get('origin');
	return origin !== url.origin;
}

/**
 * The one admin check for page loads and endpoints: 401 without a user, 403 for a non-admin.
 * Every admin `+page.server.ts` and `+server.ts` calls it itself (tRPC has `adminProcedure`);
 * the hook's route check is only a second lock, never the only one.
 */
export function requireAdmin(locals: App.Locals): NonNullable<App.Locals['user']> {
	if (!locals.user) error(401, 'Sign in first.');
	if (locals.user.role !== 'admin') error(403, 'Admins only.');
	return locals.user;
}

/** Admin routes by their route id (what SvelteKit matched), not by the raw path: `/%61dmin` is `/admin` too. */
export function isAdminRoute(routeId: string | null): boolean {
	return !!routeId && /^\/(\([^)]+\)\/)*admin(\/|$)/.test(routeId);
}

/**
 * Where to go after signing in: only a path on this app's own origin. `next` is resolved against
 * the origin the way a browser would (so `/\evil`, `//evil`, `https:evil`, `javascript:` and
 * their encoded forms cannot leave it); anything else falls back to `/`.
 */
export function safeNext(next: string | null, origin: string): string {
	if (!next || !next.startsWith('/')) return '/';
	let url: URL;
	try {
		url = new URL(next, origin);
	} catch {
		return '/';
	}
	if (url.origin !== origin) return '/';
	// A backslash or a second slash right after the first one is treated as an authority by some
	// browsers after decoding; keep only paths that start with one plain slash.
	const out = url.pathname + url.search + url.hash;
	if (!out.startsWith('/') || /^\/[\\/]/.test(out) || /^\/(%2f|%5c)/i.test(out)) return '/';
	return out;
}
