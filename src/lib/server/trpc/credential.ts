import type { RequestEvent } from '@sveltejs/kit';
import { credentialOf, type Credential } from '../executions/authority';
import type { Context } from './context';

/** What the caller decides with: its API token, or its browser session (and when it last gave the password). */
export function credential(ctx: Pick<Context, 'apiToken' | 'event'>): Credential {
	return credentialOf({ apiToken: ctx.apiToken, sessionVerifiedAt: ctx.event.locals?.sessionVerifiedAt });
}

/**
 * Which page a browser's click came from, for the audit route: Ops or a chat card. Read from the
 * Referer the browser sets (a page's script cannot point it at another origin), never from the
 * request body; anything else counts as the chat card.
 */
export function surfaceOf(event: Partial<Pick<RequestEvent, 'url' | 'request'>>): 'button' | 'ops' {
	const referer = event.request?.headers.get('referer');
	if (!referer || !event.url) return 'button';
	try {
		const u = new URL(referer);
		return u.origin === event.url.origin && /^\/ops(\/|$)/.test(u.pathname) ? 'ops' : 'button';
	} catch {
		return 'button';
	}
}
