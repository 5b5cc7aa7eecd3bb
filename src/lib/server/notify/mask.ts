import type { WebhookRow } from '../db/queries/webhooks';
import type { WebhookView, WebhookDelivery } from '../../schemas/notifications';

const DOTS = '•••';

/** The first `keep` characters of a secret and dots: enough to recognise it, never enough to use it. */
function hint(s: string, keep = 2): string {
	return s.length <= keep + 2 ? DOTS : `${s.slice(0, keep)}${DOTS}`;
}

/**
 * A webhook URL as Settings shows it: scheme, host and port whole; a password, every query
 * value and every path segment cut to a hint (an ntfy topic is its own secret, and other services
 * put theirs anywhere in the path: `/hook/<secret>/`, `/api/webhooks/<id>/<token>`).
 */
export function maskUrl(raw: string): string {
	let u: URL;
	try {
		u = new URL(raw);
	} catch {
		return DOTS;
	}
	const user = u.username ? `${hint(decodeURIComponent(u.username))}${u.password ? `:${DOTS}` : ''}@` : '';
	const segments = u.pathname.split('/').map((seg) => (seg ? hint(decodeURIComponent(seg)) : seg));
	const query = [...u.searchParams.keys()].map((k) => `${k}=${DOTS}`).join('&');
	return `${u.protocol}//${user}${u.host}${segments.join('/')}${query ? `?${query}` : ''}`;
}

/** Header names with their values cut to a hint (`Authorization: Be•••`). */
export function maskHeaders(h: Record<string, string>): Record<string, string> {
	return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, hint(v)]));
}

export function webhookView(w: WebhookRow, s: { lastOkAt: string | null; failures: WebhookDelivery[] } | undefined): WebhookView {
	return {
		id: w.id,
		name: w.name,
		kind: w.kind,
		maskedUrl: maskUrl(w.url),
		maskedHeaders: maskHeaders(w.headers),
		enabled: w.enabled,
		createdAt: w.createdAt,
		lastOkAt: s?.lastOkAt ?? null,
		failures: s?.failures ?? []
	};
}
