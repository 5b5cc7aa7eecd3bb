import { APICallError } from 'ai';

/** One readable sentence about why a model call failed, for the operator. */
export function describeModelError(e: unknown): string {
	if (APICallError.isInstance(e)) {
		const status = e.statusCode;
		const detail = (e.message || '').slice(0, 300);
		if (status === 429) return `the model server is rate-limiting requests (HTTP 429): ${detail}`;
		if (status === 401 || status === 403) return `the model server refused the API key (HTTP ${status}): ${detail}`;
		if (status === 404) return `the model server does not know this model or URL (HTTP 404): ${detail}`;
		if (status && status >= 500) return `the model server failed (HTTP ${status}): ${detail}`;
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
