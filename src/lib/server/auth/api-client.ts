/**
 * Whether a POST to a form action comes from a script (curl, fetch, an HTTP library) rather than a
 * browser: SvelteKit answers it with its action JSON instead of a page because its Accept header
 * prefers JSON to HTML (curl's and fetch's default is any type), and it is not an enhanced form
 * (`x-sveltekit-action: true`). SvelteKit sends a `fail()` to such a request as HTTP 200, so an
 * action refuses it by throwing `error(status)` instead: the status is then the real one.
 * The negotiation is SvelteKit's own (`is_action_json_request`), so both always agree.
 */
export function isApiClient(request: Request): boolean {
	if (request.method !== 'POST' || request.headers.get('x-sveltekit-action') === 'true') return false;
	return negotiate(request.headers.get('accept') ?? '*/*', ['application/json', 'text/html']) === 'application/json';
}

/** The type of `types` the Accept header prefers (q-value, then specificity, then order), as SvelteKit picks it. */
export function negotiate(accept: string, types: string[]): string | undefined {
	const parts: { type: string; subtype: string; q: number; i: number }[] = [];
	accept.split(',').forEach((str, i) => {
		const m = /^[ \t]*([^/ \t]+)\/([^; \t]+)[ \t]*(?:;[ \t]*q=([0-9.]+))?/.exec(str);
		if (m) parts.push({ type: m[1], subtype: m[2], q: +(m[3] ?? '1'), i });
	});
	parts.sort((a, b) => {
		if (a.q !== b.q) return b.q - a.q;
		if ((a.subtype === '*') !== (b.subtype === '*')) return a.subtype === '*' ? 1 : -1;
		if ((a.type === '*') !== (b.type === '*')) return a.type === '*' ? 1 : -1;
		return a.i - b.i;
	});
	let accepted: string | undefined;
	let best = Infinity;
	for (const mime of types) {
		const [type, subtype] = mime.split('/');
		const at = parts.findIndex((p) => (p.type === type || p.type === '*') && (p.subtype === subtype || p.subtype === '*'));
		if (at !== -1 && at < best) {
			accepted = mime;
			best = at;
		}
	}
	return accepted;
}
