import dns from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net, { type LookupFunction, type Socket } from 'node:net';
import { convert } from 'html-to-text';
import { isForbiddenAddress } from './ssrf';

export interface FetchReadableOptions {
	/** Host names (exact, case-insensitive) the operator allows even on private addresses. */
	allowHosts: string[];
	signal?: AbortSignal;
	/** One deadline for all hops and the body. Default 10 000. */
	timeoutMs?: number;
	/** Body bytes read at most. Default 2 MB. */
	maxBytes?: number;
	/** Characters of text returned at most. Default 8192. */
	maxChars?: number;
	maxRedirects?: number;
	/** The deadline's signal for timeoutMs (default AbortSignal.timeout); a test fires its own. */
	deadline?: (ms: number) => AbortSignal;
}

export type FetchReadableResult =
	{ url: string; finalUrl: string; status: number; contentType: string; text: string; truncated: boolean; bytes: number } | { error: string };

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Thrown (or passed to destroy) when an address check fails; its message is model-facing. */
class Refused extends Error {}

const refusedAddress = (host: string, ip: string) =>
	new Refused(host === ip ? `refused: ${ip} is a loopback/private address` : `refused: ${host} resolves to ${ip}, a loopback/private address`);

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** dns.lookup that fails if any resolved address is forbidden, so the check binds the connect. */
function guardedLookup(allowed: boolean): LookupFunction {
	return (hostname, options, callback) => {
		dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
			if (err) return callback(err, '');
			const bad = allowed ? undefined : addresses.find((a) => isForbiddenAddress(a.address));
			if (bad) return callback(refusedAddress(hostname, bad.address), '');
			if (addresses.length === 0) {
				return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
			}
			if (options.all) return callback(null, addresses);
			callback(null, addresses[0].address, addresses[0].family);
		});
	};
}

/** Checks scheme, credentials and (for IP literals, which skip lookup) the address. */
function validate(raw: string, allowHosts: string[]): { url: URL; allowed: boolean } | { error: string } {
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		return { error: `invalid URL: ${raw}` };
	}
	if (url.protocol !== 'http:' && url.protocol !== 'https:') return { error: 'refused: only http and https URLs' };
	if (url.username || url.password) return { error: 'refused: URLs with credentials are not allowed' };
	const host = bare(url.hostname);
	const allowed = allowHosts.some((h) => bare(h.toLowerCase()) === host);
	if (!allowed && net.isIP(host) && isForbiddenAddress(host)) return { error: refusedAddress(host, host).message };
	return { url, allowed };
}

/** Sends one GET and resolves with the response head; the body is left unread. */
function send(url: URL, allowed: boolean, signal: AbortSignal): Promise<IncomingMessage> {
	return new Promise((resolve, reject) => {
		const host = bare(url.hostname);
		const req = (url.protocol === 'https:' ? https : http).request({
			protocol: url.protocol,
			hostname: host,
			port: url.port || undefined,
			path: url.pathname + url.search,
			method: 'GET',
			agent: false,
			lookup: guardedLookup(allowed),
			signal,
			headers: {
				'user-agent': 'Nomos/0.1 (homelab agent; http_get)',
				accept: 'text/html, text/plain;q=0.9, application/json;q=0.9, */*;q=0.1',
				'accept-encoding': 'identity'
			}
		});
		// Belt and braces: the peer we actually connected to must pass the check as well.
		req.on('socket', (socket: Socket) => {
			socket.prependOnceListener('connect', () => {
				const ip = socket.remoteAddress ?? '';
				if (!allowed && isForbiddenAddress(ip)) req.destroy(refusedAddress(host, ip));
			});
		});
		req.on('response', resolve);
		req.on('error', reject);
		req.end();
	});
}

/** Reads up to maxBytes; stops (destroying the socket) at the cap, on abort or on a broken stream. */
function readBody(res: IncomingMessage, maxBytes: number): Promise<{ body: Buffer; capped: boolean; complete: boolean }> {
	return new Promise((resolve) => {
		const chunks: Buffer[] = [];
		let n = 0;
		let done = false;
		const finish = (capped: boolean, complete: boolean) => {
			if (done) return;
			done = true;
			resolve({ body: Buffer.concat(chunks, n), capped, complete });
		};
		res.on('data', (chunk: Buffer) => {
			if (done) return;
			const room = maxBytes - n;
			if (chunk.length > room) {
				chunks.push(chunk.subarray(0, room));
				n += room;
				finish(true, false);
				res.destroy();
				return;
			}
			chunks.push(chunk);
			n += chunk.length;
		});
		res.on('end', () => finish(false, true));
		res.on('error', () => finish(false, false));
		res.on('close', () => finish(false, res.complete));
	});
}

function isReadable(mime: string): boolean {
	return (
		mime.startsWith('text/') || mime === 'application/xhtml+xml' || mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'))
	);
}

function decode(body: Buffer, charset: string | undefined): string {
	try {
		return new TextDecoder(charset || 'utf-8').decode(body);
	} catch {
		return new TextDecoder('utf-8').decode(body); // unknown charset label
	}
}

function absolute(href: string, base: string): string {
	try {
		return new URL(href, base).href;
	} catch {
		return href;
	}
}

function toText(raw: string, mime: string, baseUrl: string): string {
	if (mime === 'text/html' || mime === 'application/xhtml+xml') {
		const skip = ['script', 'style', 'noscript', 'template', 'svg', 'iframe', 'nav', 'img'];
		return convert(raw, {
			wordwrap: false,
			selectors: [
				...skip.map((selector) => ({ selector, format: 'skip' })),
				{ selector: 'a', options: { pathRewrite: (href: string) => absolute(href, baseUrl), linkBrackets: ['[', ']'], hideLinkHrefIfSameAsText: true } }
			]
		}).trim();
	}
	if (mime === 'application/json' || mime.endsWith('+json')) {
		try {
			return JSON.stringify(JSON.parse(raw), null, 2);
		} catch {
			return raw; // malformed or cut-off JSON: show it as is
		}
	}
	return raw;
}

function describeError(err: unknown, url: URL, timedOut: boolean, cancelled: boolean, timeoutMs: number): string {
	if (err instanceof Refused) return err.message;
	if (timedOut) return `timed out after ${timeoutMs / 1000} s`;
	if (cancelled) return 'cancelled';
	const e = err as NodeJS.ErrnoException & { errors?: NodeJS.ErrnoException[] };
	const code = e.code ?? e.errors?.[0]?.code;
	if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `could not resolve host ${url.hostname}`;
	if (code === 'ECONNREFUSED') return `connection refused by ${url.host}`;
	return `request to ${url.host} failed: ${code ?? e.message}`;
}

/**
 * GETs an http(s) URL for the agent with SSRF protection (every hop's resolved and connected
 * address is checked unless its host is allow-listed), manual redirects, one overall deadline,
 * a body cap, and conversion of HTML/JSON/text to bounded readable text.
 */
export async function fetchReadable(url: string, opts: FetchReadableOptions): Promise<FetchReadableResult> {
	const { timeoutMs = 10_000, maxBytes = 2 * 1024 * 1024, maxChars = 8192, maxRedirects = 3 } = opts;
	const timeout = (opts.deadline ?? AbortSignal.timeout)(timeoutMs);
	const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
	if (opts.signal?.aborted) return { error: 'cancelled' };

	let current = url;
	for (let hop = 0; ; hop++) {
		const checked = validate(current, opts.allowHosts);
		if ('error' in checked) return checked;
		const target = checked.url;

		let res: IncomingMessage;
		try {
			res = await send(target, checked.allowed, signal);
		} catch (err) {
			return { error: describeError(err, target, timeout.aborted, !!opts.signal?.aborted, timeoutMs) };
		}

		const status = res.statusCode ?? 0;
		if (REDIRECTS.has(status)) {
			res.destroy();
			const location = res.headers.location;
			if (!location) return { error: `HTTP ${status} redirect without a Location header` };
			if (hop >= maxRedirects) return { error: `too many redirects (max ${maxRedirects})` };
			try {
				current = new URL(location, target).href;
			} catch {
				return { error: `invalid redirect Location: ${location}` };
			}
			continue;
		}

		const contentType = res.headers['content-type'] ?? '';
		const [mimeRaw, ...params] = contentType.split(';');
		const mime = mimeRaw.trim().toLowerCase();
		if (!isReadable(mime)) {
			res.destroy();
			return { error: `unsupported content type ${mime || '(none)'}: only text, HTML and JSON can be read` };
		}
		const encoding = (res.headers['content-encoding'] ?? 'identity').toLowerCase();
		if (encoding !== 'identity') {
			res.destroy();
			return { error: `unsupported content encoding ${encoding}` };
		}

		const { body, capped, complete } = await readBody(res, maxBytes);
		const notes: string[] = [];
		if (capped) notes.push(`[… response body cut at ${maxBytes} bytes]`);
		else if (!complete) {
			if (body.length === 0) {
				return { error: describeError(new Error('connection closed'), target, timeout.aborted, !!opts.signal?.aborted, timeoutMs) };
			}
			if (opts.signal?.aborted) return { error: 'cancelled' };
			notes.push(timeout.aborted ? `[… timed out after ${timeoutMs / 1000} s; partial content]` : '[… connection closed early; partial content]');
		}

		const charset = params.map((p) => p.trim().match(/^charset\s*=\s*"?([^";]+)"?$/i)?.[1]).find(Boolean);
		let text = toText(decode(body, charset), mime, target.href);
		let truncated = notes.length > 0;
		if (text.length > maxChars) {
			notes.unshift(`[… truncated: ${text.length - maxChars} more characters]`);
			text = text.slice(0, maxChars);
			truncated = true;
		}
		if (notes.length) text += '\n\n' + notes.join('\n');
		return { url, finalUrl: target.href, status, contentType: mime, text, truncated, bytes: body.length };
	}
}
