const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function hostnameOf(host: string): string | null {
	try {
		return new URL(`http://${host}`).hostname.toLowerCase();
	} catch {
		return null;
	}
}

/**
 * DNS-rebinding protection for /mcp, as the MCP transport spec asks: a page on evil.example whose
 * name is made to resolve to this server reaches it with `Host: evil.example` (and its own
 * Origin), and must not be answered. Allowed: the host of the configured public origin (ORIGIN)
 * and loopback names on any port (a rebinding page cannot send those). Returns the refusal, or
 * null. A request without Origin (every non-browser MCP client) is judged by its Host alone.
 */
export function mcpRebindingRefusal(request: Request, url: URL, configuredOrigin: string | undefined): { status: 403 | 421; message: string } | null {
	const configured = configuredOrigin ? new URL(configuredOrigin) : null;
	const host = (request.headers.get('host') ?? url.host).toLowerCase();
	const hostOk = (configured !== null && host === configured.host.toLowerCase()) || LOOPBACK.has(hostnameOf(host) ?? '');
	if (!hostOk)
		return {
			status: 421,
			message: `This server does not answer MCP for the host ${host}: connect to ${configured?.host ?? 'it on localhost'} (set ORIGIN to serve another name).`
		};
	const origin = request.headers.get('origin');
	if (origin === null) return null;
	let o: URL | null = null;
	try {
		o = new URL(origin);
	} catch {
		/* "null" or garbage: refused below */
	}
	const originOk = !!o && ((configured !== null && o.origin === configured.origin) || LOOPBACK.has(o.hostname.toLowerCase()));
	return originOk ? null : { status: 403, message: `Cross-origin MCP request refused (Origin ${origin}).` };
}
