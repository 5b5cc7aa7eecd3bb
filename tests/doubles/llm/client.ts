/** Typed helper for driving a running scripted LLM double from another process (e.g. Playwright). */
import type { Dialect, FallbackRule, RecordedRequest, ScriptedLlmState, ScriptedResponse } from './types';

export type * from './types';

export interface LlmControl {
	push(...responses: ScriptedResponse[]): Promise<void>;
	/** Replace the declarative fallback; null clears it. */
	fallback(rules: FallbackRule[] | null): Promise<void>;
	requests(): Promise<RecordedRequest[]>;
	/** Answers for Nomos's next title requests (kept apart from the conversation's script). */
	pushTitle(...responses: ScriptedResponse[]): Promise<void>;
	titleRequests(): Promise<RecordedRequest[]>;
	state(): Promise<ScriptedLlmState>;
	reset(): Promise<void>;
	dialect(dialect: Dialect, contextTokens?: number | null): Promise<void>;
}

/** `baseURL` may be the OpenAI base (http://127.0.0.1:PORT/v1) or just the origin. */
export function llmControl(baseURL: string): LlmControl {
	const origin = new URL(baseURL).origin;
	async function call<T>(method: 'GET' | 'POST', route: string, body?: unknown): Promise<T> {
		const res = await fetch(`${origin}/__control/${route}`, {
			method,
			headers: body === undefined ? undefined : { 'content-type': 'application/json' },
			body: body === undefined ? undefined : JSON.stringify(body)
		});
		const text = await res.text();
		if (!res.ok) throw new Error(`LLM double ${method} /__control/${route} failed: ${res.status} ${text}`);
		return JSON.parse(text) as T;
	}
	return {
		push: async (...responses) => void (await call('POST', 'push', responses)),
		fallback: async (rules) => void (await call('POST', 'fallback', { rules })),
		requests: () => call<RecordedRequest[]>('GET', 'requests'),
		pushTitle: async (...responses) => void (await call('POST', 'titles', responses)),
		titleRequests: () => call<RecordedRequest[]>('GET', 'titles'),
		state: () => call<ScriptedLlmState>('GET', 'state'),
		reset: async () => void (await call('POST', 'reset')),
		dialect: async (dialect, contextTokens) => void (await call('POST', 'dialect', { dialect, contextTokens: contextTokens ?? null }))
	};
}
