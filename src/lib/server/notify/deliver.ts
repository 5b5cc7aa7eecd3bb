import { STATUS_CODES } from 'node:http';
import type { Notice } from '../../schemas/notifications';
import type { WebhookRow } from '../db/queries/webhooks';

/** A delivery gives up after this long (connect, send and the start of the answer). */
export const DELIVERY_TIMEOUT_MS = 5_000;
/** What a notice's text may take of a request body. */
const MAX_TEXT = 4_000;
const MAX_TITLE = 250;

export type DeliveryResult = { ok: true; httpStatus: number } | { ok: false; httpStatus: number | null; error: string };

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** A header value that HTTP carries as is: ASCII stays, anything else becomes an RFC 2047 encoded-word (ntfy decodes it). */
export function headerText(s: string): string {
	const flat = s.replace(/[\r\n]+/g, ' ');
	return /^[\x20-\x7e]*$/.test(flat) ? flat : `=?UTF-8?B?${Buffer.from(flat, 'utf8').toString('base64')}?=`;
}

/** The link to the card, when the app's public origin is known. */
export function noticeUrl(notice: Notice, origin: string | null): string | null {
	return origin ? new URL(notice.path, origin).toString() : null;
}

/** The request a webhook gets for a notice: ntfy's text body with Title/Click/Tags headers, or one JSON object. */
export function buildRequest(
	hook: Pick<WebhookRow, 'kind' | 'headers'>,
	notice: Notice,
	origin: string | null
): { headers: Record<string, string>; body: string } {
	const url = noticeUrl(notice, origin);
	const title = cut(notice.title, MAX_TITLE);
	const text = cut(notice.text, MAX_TEXT);
	if (hook.kind === 'ntfy') {
		const tags = notice.kind === 'approval' ? 'warning' : notice.kind === 'question' ? 'question' : notice.kind === 'plan' ? 'clipboard' : 'white_check_mark';
		return {
			headers: {
				...hook.headers,
				'content-type': 'text/plain; charset=utf-8',
				Title: headerText(title),
				Tags: tags,
				...(url ? { Click: url } : {})
			},
			body: text
		};
	}
	return {
		headers: { ...hook.headers, 'content-type': 'application/json' },
		body: JSON.stringify({ kind: notice.kind, sessionId: notice.sessionId, title, text, url, at: notice.at })
	};
}

/** The fixed text of an HTTP status ("HTTP 500 Internal Server Error"): never the receiver's own words. */
export function statusText(status: number): string {
	const reason = STATUS_CODES[status];
	return reason ? `HTTP ${status} ${reason}` : `HTTP ${status}`;
}

/**
 * POSTs one notice to one webhook. Admins set these URLs and LAN addresses are the common case
 * (ntfy at home), so any host is allowed; but a redirect is never followed (it could point
 * anywhere), the whole exchange ends after DELIVERY_TIMEOUT_MS, and the answer's body is never
 * read: a failure says the status and a fixed reason only, so a webhook (and its Send test) is
 * no way to read what an internal service answers. Never throws: a failure comes back with its
 * status and error.
 */
export async function deliver(hook: Pick<WebhookRow, 'kind' | 'url' | 'headers'>, notice: Notice, origin: string | null): Promise<DeliveryResult> {
	const { headers, body } = buildRequest(hook, notice, origin);
	const signal = AbortSignal.timeout(DELIVERY_TIMEOUT_MS);
	try {
		const res = await fetch(hook.url, { method: 'POST', headers, body, redirect: 'manual', signal });
		await res.body?.cancel().catch(() => undefined);
		if (res.status >= 200 && res.status < 300) return { ok: true, httpStatus: res.status };
		if (res.status >= 300 && res.status < 400) {
			const to = res.headers.get('location');
			let where = 'elsewhere';
			try {
				if (to) where = new URL(to, hook.url).host;
			} catch {
				/* an unreadable Location: say "elsewhere" */
			}
			return { ok: false, httpStatus: res.status, error: `redirected to ${where}; redirects are not followed` };
		}
		return { ok: false, httpStatus: res.status, error: statusText(res.status) };
	} catch (e) {
		if (signal.aborted) return { ok: false, httpStatus: null, error: `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` };
		const err = e as Error & { cause?: { code?: string; message?: string } };
		const cause = err.cause?.code ?? err.cause?.message;
		return { ok: false, httpStatus: null, error: cut(cause ? `${err.message} (${cause})` : err.message, 300) };
	}
}
