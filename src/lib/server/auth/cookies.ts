import type { Cookies } from '@sveltejs/kit';
import { parse } from 'cookie';

export const SESSION_COOKIE = 'nomos_session';

/**
 * The sign-in token in a Cookie header, or null. Parsed by the `cookie` package: the first of
 * duplicate names wins and a value that is not valid percent-encoding stays as sent (as in
 * SvelteKit's `cookies.get`), so a malformed header is "no session", never a thrown error.
 */
export function sessionTokenFrom(cookieHeader: string | null | undefined): string | null {
	if (!cookieHeader) return null;
	return parse(cookieHeader)[SESSION_COOKIE] || null;
}

/** HttpOnly, SameSite=Lax; Secure everywhere but plain-http localhost. */
export function setSessionCookie(cookies: Cookies, url: URL, token: string, expires: Date): void {
	const local = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
	cookies.set(SESSION_COOKIE, token, {
		path: '/',
		httpOnly: true,
		sameSite: 'lax',
		secure: url.protocol === 'https:' || !local,
		expires
	});
}

export function clearSessionCookie(cookies: Cookies): void {
	cookies.delete(SESSION_COOKIE, { path: '/' });
}
