/** Paths reachable without signing in. */
export function isPublicPath(pathname: string): boolean {
	return pathname === '/login' || pathname === '/setup' || pathname.startsWith('/_app/') || pathname === '/favicon.svg';
}

/** Requests answered with a status instead of a redirect to /login. */
export function isApiPath(pathname: string): boolean {
	return pathname.startsWith('/trpc') || pathname.startsWith('/api/') || pathname.endsWith('/events');
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Any state-changing request must come from the app's own origin. SvelteKit's own check covers
 * only form content types; this one covers JSON, text/plain and everything else too.
 */
export function isCrossOrigin(request: Request, url: URL): boolean {
	if (SAFE.has(request.method)) return false;
	const origin = request.headers.get('origin');
	return origin !== url.origin;
}
