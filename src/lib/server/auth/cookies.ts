import type { Cookies } from '@sveltejs/kit';

export const SESSION_COOKIE = 'nomos_session';

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
