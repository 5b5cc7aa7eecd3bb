import { z } from 'zod';
import type { ToolSet } from 'ai';
import { env } from '../env';

/** Characters per token, roughly, for English and JSON (conservative: overestimates tokens). */
const CHARS_PER_TOKEN = 3.5;
/** Tokens kept free for the model's answer. */
const ANSWER_RESERVE = 1024;
/** Ollama's OpenAI endpoint runs at this context unless told otherwise (OLLAMA_CONTEXT_LENGTH, num_ctx). */
const OLLAMA_DEFAULT_CTX = 4096;

export const estimateTokens = (chars: number) => Math.ceil(chars / CHARS_PER_TOKEN);

/** The characters the tool definitions take in a request (name, description, JSON schema). */
export function toolsChars(tools: ToolSet): number {
	let n = 0;
	for (const [name, t] of Object.entries(tools)) n += name.length + (t.description?.length ?? 0) + schemaChars(t.inputSchema) + 40;
	return n;
}

/** JSON schema sizes by input schema (the tools' schemas are built once; their conversion is not free). */
const schemaSizes = new WeakMap<object, number>();
function schemaChars(inputSchema: unknown): number {
	if (typeof inputSchema !== 'object' || inputSchema === null) return 2;
	let size = schemaSizes.get(inputSchema);
	if (size === undefined) {
		let schema: unknown = {};
		try {
			// An AI SDK `jsonSchema()` carries its JSON Schema; anything else here is zod.
			const own = (inputSchema as { jsonSchema?: unknown }).jsonSchema;
			schema = own && typeof own === 'object' && !('then' in own) ? own : z.toJSONSchema(inputSchema as z.ZodType);
		} catch {
			/* neither */
		}
		size = JSON.stringify(schema).length;
		schemaSizes.set(inputSchema, size);
	}
	return size;
}

type Known = { tokens: number | null; source: string; at: number; key: string };
let cached: Known | undefined;

/**
 * The model's context window in tokens: NOMOS_CONTEXT_TOKENS when set; else what the server
 * says (Ollama's /api/show `num_ctx`, or its 4096 default for the OpenAI endpoint; vLLM's
 * `max_model_len` in /v1/models); null when nobody says. Cached for ten minutes.
 */
export async function contextWindow(): Promise<{ tokens: number | null; source: string }> {
	const config = env();
	if (config.NOMOS_CONTEXT_TOKENS) return { tokens: config.NOMOS_CONTEXT_TOKENS, source: 'NOMOS_CONTEXT_TOKENS' };
	const key = `${config.OPENAI_BASE_URL}|${config.NOMOS_MODEL}`;
	if (!cached || cached.key !== key || Date.now() - cached.at >= 600_000) {
		cached = { ...(await askServer(config.OPENAI_BASE_URL, config.NOMOS_MODEL, config.OPENAI_API_KEY)), at: Date.now(), key };
	}
	return { tokens: cached.tokens, source: cached.source };
}

export function forgetContextWindow(): void {
	cached = undefined;
}

/** The context window as the server says it now (not cached; for the model check). */
export async function readContextWindow(): Promise<{ tokens: number | null; source: string }> {
	const config = env();
	if (config.NOMOS_CONTEXT_TOKENS) return { tokens: config.NOMOS_CONTEXT_TOKENS, source: 'NOMOS_CONTEXT_TOKENS' };
	return askServer(config.OPENAI_BASE_URL, config.NOMOS_MODEL, config.OPENAI_API_KEY);
}

async function askServer(baseURL: string | undefined, model: string | undefined, apiKey: string | undefined): Promise<{ tokens: number | null; source: string }> {
	if (!baseURL || !model) return { tokens: null, source: 'unknown' };
	const signal = AbortSignal.timeout(3000);
	const headers = apiKey ? { authorization: `Bearer ${apiKey}` } : undefined;
	try {
		const r = await fetch(`${baseURL.replace(/\/$/, '')}/models`, { headers, signal });
		if (r.ok) {
			const list = (await r.json()) as { data?: Array<{ id?: string; max_model_len?: number }> };
			const m = list.data?.find((x) => x.id === model);
			if (typeof m?.max_model_len === 'number') return { tokens: m.max_model_len, source: 'the server (max_model_len)' };
		}
	} catch {
		/* no answer: try the next */
	}
	try {
		const root = baseURL.replace(/\/v1\/?$/, '');
		const r = await fetch(`${root}/api/show`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }), signal });
		if (r.ok) {
			const show = (await r.json()) as { parameters?: string };
			const numCtx = /(?:^|\n)\s*num_ctx\s+(\d+)/.exec(show.parameters ?? '')?.[1];
			return numCtx ? { tokens: Number(numCtx), source: "Ollama (the model's num_ctx)" } : { tokens: OLLAMA_DEFAULT_CTX, source: "Ollama's default for its OpenAI endpoint" };
		}
	} catch {
		/* not Ollama */
	}
	return { tokens: null, source: 'unknown' };
}

/** Characters of history that fit: the window minus system prompt, tools and the answer's room. */
export function historyBudgetChars(windowTokens: number | null, fixedChars: number, fallback: number): number {
	if (!windowTokens) return fallback;
	const free = windowTokens - estimateTokens(fixedChars) - ANSWER_RESERVE;
	return Math.max(2000, Math.min(fallback, Math.floor(free * CHARS_PER_TOKEN)));
}

/**
 * When the server reports far fewer prompt tokens than were sent (or exactly its window), it cut
 * the conversation from the front, usually with the system prompt and tools: say so, and how to
 * raise the limit. Null when it looks fine.
 */
export function truncationWarning(sentChars: number, reportedTokens: number | undefined, windowTokens: number | null): string | null {
	if (!reportedTokens) return null;
	const sent = estimateTokens(sentChars);
	const atCap = windowTokens !== null && reportedTokens >= windowTokens && sent > windowTokens;
	if (!atCap && reportedTokens > sent * 0.6) return null;
	return (
		`The model server read only ${reportedTokens} prompt tokens of about ${sent} sent: it cut the start of the conversation ` +
		`(the instructions and tool definitions with it), so answers may ignore them. Raise the model's context: for Ollama start it with ` +
		`OLLAMA_CONTEXT_LENGTH=16384 (or PARAMETER num_ctx 16384 in a Modelfile), then set NOMOS_CONTEXT_TOKENS to the same number.`
	);
}
