import { APICallError } from 'ai';
import { env } from '../env';

/** What to tell the operator when the configured model cannot call tools. */
function noToolsText(): string {
	const model = env().NOMOS_MODEL ?? 'the configured model';
	return `the model "${model}" does not support tools, which Nomos needs; set NOMOS_MODEL to a tool-capable model (for Ollama e.g. qwen2.5, llama3.1 or mistral-nemo)`;
}

/** One readable sentence about why a model call failed, for the operator. */
export function describeModelError(e: unknown): string {
	if (APICallError.isInstance(e)) {
		const status = e.statusCode;
		const detail = (e.message || '').slice(0, 300);
		if (status === 400 && /does not support tools/i.test(e.message + (e.responseBody ?? ''))) return noToolsText();
		if (status === 429) return `the model server is rate-limiting requests (HTTP 429): ${detail}`;
		if (status === 401 || status === 403) return `the model server refused the API key (HTTP ${status}): ${detail}`;
		if (status === 404) return `the model server does not know this model or URL (HTTP 404): ${detail}`;
		if (status && status >= 500) return `the model server failed (HTTP ${status}): ${detail}`;
		if (status && status < 300) return 'the connection to the model server dropped mid-reply (the stream broke off)';
		if (status) return `the model server answered HTTP ${status}: ${detail}`;
		const cause = (e.cause as Error | undefined)?.message;
		return `the connection to the model server broke: ${cause ?? detail}`;
	}
	if (e instanceof Error) {
		if (e.name === 'AbortError' || e.name === 'TimeoutError') return 'the model did not answer in time';
		const cause = (e as Error & { cause?: { code?: string; message?: string } }).cause;
		if (cause?.code === 'ECONNREFUSED') return `cannot reach the model server (${cause.message})`;
		return e.message;
	}
	return String(e);
}

/** The longest Nomos waits on a server's Retry-After before trying again. */
export const MAX_RETRY_AFTER_MS = 60_000;

export type ModelFault = {
	/** Worth another try (rate limit, server error, dropped connection, stall, empty reply). */
	retry: boolean;
	/** How long to wait first. */
	waitMs: number;
	/** The cause in a few words, for the note: "rate limited (HTTP 429)". */
	cause: string;
};

function retryAfterMs(headers: Record<string, string> | undefined): number | null {
	if (!headers) return null;
	const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
	const ms = Number(h['retry-after-ms']);
	if (h['retry-after-ms'] !== undefined && Number.isFinite(ms)) return ms;
	const raw = h['retry-after'];
	if (raw === undefined) return null;
	const s = Number(raw);
	if (Number.isFinite(s)) return s * 1000;
	const at = Date.parse(raw);
	return Number.isFinite(at) ? at - Date.now() : null;
}

/**
 * What a failed model call means for the turn: retry or not, after how long, and its cause in
 * words. A server's Retry-After is honoured up to MAX_RETRY_AFTER_MS; a request the server
 * refuses as such (bad request, key, unknown model) is not retried.
 */
export function classifyModelError(e: unknown): ModelFault {
	if (e === undefined) return { retry: true, waitMs: 500, cause: 'an empty reply' };
	if (APICallError.isInstance(e)) {
		const status = e.statusCode;
		if (status === 429) {
			const after = retryAfterMs(e.responseHeaders);
			return { retry: true, waitMs: Math.min(MAX_RETRY_AFTER_MS, Math.max(250, after ?? 2_000)), cause: 'rate limited by the model server (HTTP 429)' };
		}
		if (status === 408) return { retry: true, waitMs: 1_000, cause: 'the model server timed out (HTTP 408)' };
		// A 2xx whose body broke off: the stream was cut, not refused.
		if (status && status < 300) return { retry: true, waitMs: 1_000, cause: 'the connection to the model server dropped mid-reply' };
		if (status && status >= 500) {
			const after = retryAfterMs(e.responseHeaders);
			return { retry: true, waitMs: Math.min(MAX_RETRY_AFTER_MS, Math.max(500, after ?? 1_000)), cause: `a server error (HTTP ${status})` };
		}
		if (status === 400 && /does not support tools/i.test(e.message + (e.responseBody ?? ''))) {
			return { retry: false, waitMs: 0, cause: noToolsText() };
		}
		if (status) return { retry: false, waitMs: 0, cause: `the model server refused the request (HTTP ${status})` };
		return { retry: true, waitMs: 1_000, cause: 'the connection to the model server dropped' };
	}
	if (e instanceof Error) {
		if (e.name === 'TimeoutError') return { retry: true, waitMs: 0, cause: 'the model server stalled (no data for 120 s)' };
		const code = (e as Error & { cause?: { code?: string } }).cause?.code;
		if (code === 'ECONNREFUSED') return { retry: true, waitMs: 2_000, cause: 'the model server cannot be reached (connection refused)' };
		// A stream cut mid-way surfaces as a parse/terminated error from the HTTP client.
		return { retry: true, waitMs: 1_000, cause: 'the connection to the model server dropped' };
	}
	return { retry: true, waitMs: 1_000, cause: e instanceof Error ? e.message : (JSON.stringify(e) ?? 'unknown error') };
}
