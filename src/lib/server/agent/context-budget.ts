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

/** Which kind of model server answers at OPENAI_BASE_URL, as far as its metadata tells. */
export type ServerKind = 'ollama' | 'llamacpp' | 'vllm' | 'other';
export const SERVER_NAMES: Record<ServerKind, string> = { ollama: 'Ollama', llamacpp: 'llama.cpp', vllm: 'vLLM', other: 'the model server' };

type Asked = {
	tokens: number | null;
	source: string;
	server: ServerKind;
	/** The window the model was trained for (Ollama's model_info `*.context_length`), when said. */
	trained?: number | null;
	/** llama.cpp's `cache_prompt` default as /props lists it (undefined: not listed or not llama.cpp). */
	cachePrompt?: boolean;
};
type Known = Asked & { at: number; key: string };
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
	const { tokens, source } = await readServerFacts();
	return { tokens, source };
}

/**
 * What the server says of itself now (not cached; for the model check): its kind, the window (as
 * NOMOS_CONTEXT_TOKENS overrides it), the trained window and llama.cpp's `cache_prompt`.
 */
export async function readServerFacts(): Promise<Asked> {
	const config = env();
	const asked = await askServer(config.OPENAI_BASE_URL, config.NOMOS_MODEL, config.OPENAI_API_KEY);
	return config.NOMOS_CONTEXT_TOKENS ? { ...asked, tokens: config.NOMOS_CONTEXT_TOKENS, source: 'NOMOS_CONTEXT_TOKENS' } : asked;
}

async function askServer(baseURL: string | undefined, model: string | undefined, apiKey: string | undefined): Promise<Asked> {
	if (!baseURL || !model) return { tokens: null, source: 'unknown', server: 'other' };
	const signal = AbortSignal.timeout(3000);
	const headers = apiKey ? { authorization: `Bearer ${apiKey}` } : undefined;
	let server: ServerKind = 'other';
	try {
		const r = await fetch(`${baseURL.replace(/\/$/, '')}/models`, { headers, signal });
		if (r.ok) {
			const list = (await r.json()) as { data?: Array<{ id?: string; max_model_len?: number; owned_by?: string }> };
			const m = list.data?.find((x) => x.id === model);
			// vLLM and llama.cpp's server say who they are in `owned_by` (and vLLM gives its window).
			const owner = list.data?.[0]?.owned_by;
			if (owner === 'llamacpp') server = 'llamacpp';
			if (owner === 'vllm' || typeof m?.max_model_len === 'number') server = 'vllm';
			if (typeof m?.max_model_len === 'number') return { tokens: m.max_model_len, source: 'the server (max_model_len)', server };
		}
	} catch {
		/* no answer: try the next */
	}
	if (server === 'llamacpp') {
		const props = await llamaProps(baseURL, apiKey);
		const nCtx = props?.default_generation_settings?.n_ctx;
		const cachePrompt = props?.default_generation_settings?.params?.cache_prompt;
		const facts = typeof cachePrompt === 'boolean' ? { cachePrompt } : {};
		return typeof nCtx === 'number' && nCtx > 0
			? { tokens: nCtx, source: 'llama.cpp (/props n_ctx, per slot)', server, ...facts }
			: { tokens: null, source: 'unknown', server, ...facts };
	}
	if (server !== 'other') return { tokens: null, source: 'unknown', server };
	try {
		const root = baseURL.replace(/\/v1\/?$/, '');
		const r = await fetch(`${root}/api/show`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }), signal });
		if (r.ok) {
			const show = (await r.json()) as { parameters?: string; model_info?: Record<string, unknown> };
			const numCtx = /(?:^|\n)\s*num_ctx\s+(\d+)/.exec(show.parameters ?? '')?.[1];
			const trainedAt = Object.entries(show.model_info ?? {}).find(([k, v]) => k.endsWith('.context_length') && typeof v === 'number')?.[1];
			const trained = typeof trainedAt === 'number' ? trainedAt : null;
			return numCtx
				? { tokens: Number(numCtx), source: "Ollama (the model's num_ctx)", server: 'ollama', trained }
				: { tokens: OLLAMA_DEFAULT_CTX, source: "Ollama's default for its OpenAI endpoint", server: 'ollama', trained };
		}
	} catch {
		/* not Ollama */
	}
	return { tokens: null, source: 'unknown', server: 'other' };
}

/** What llama.cpp's server says of itself (`GET /props` at its root), as far as Nomos reads it; null when it did not answer. */
export type LlamaProps = { default_generation_settings?: { n_ctx?: number; params?: { cache_prompt?: boolean } } };

export async function llamaProps(baseURL: string, apiKey: string | undefined): Promise<LlamaProps | null> {
	try {
		const r = await fetch(`${baseURL.replace(/\/v1\/?$/, '').replace(/\/$/, '')}/props`, {
			headers: apiKey ? { authorization: `Bearer ${apiKey}` } : undefined,
			signal: AbortSignal.timeout(3000)
		});
		return r.ok ? ((await r.json()) as LlamaProps) : null;
	} catch {
		return null;
	}
}

/**
 * The kind of the configured model server (from the cached answer when there is one; it is asked
 * even when NOMOS_CONTEXT_TOKENS is set, since only a note that tells how to fix a cut needs it).
 */
export async function serverKind(): Promise<ServerKind> {
	const config = env();
	const key = `${config.OPENAI_BASE_URL}|${config.NOMOS_MODEL}`;
	if (cached && cached.key === key) return cached.server;
	const asked = await askServer(config.OPENAI_BASE_URL, config.NOMOS_MODEL, config.OPENAI_API_KEY);
	if (!config.NOMOS_CONTEXT_TOKENS) cached = { ...asked, at: Date.now(), key };
	return asked.server;
}

/** Characters of history that fit: the window minus system prompt, tools and the answer's room. */
export function historyBudgetChars(windowTokens: number | null, fixedChars: number, fallback: number): number {
	if (!windowTokens) return fallback;
	const free = windowTokens - estimateTokens(fixedChars) - ANSWER_RESERVE;
	return Math.max(2000, Math.min(fallback, Math.floor(free * CHARS_PER_TOKEN)));
}

/**
 * Tokens of history a request may send before older turns are folded into a summary: the
 * configured budget, or what the window leaves beside the instructions, tools and the answer's
 * room when that is less. Null: folding is off (0 configured).
 */
export function historyBudgetTokens(windowTokens: number | null, fixedChars: number, configured: number): number | null {
	if (!configured) return null;
	if (!windowTokens) return configured;
	return Math.max(500, Math.min(configured, windowTokens - estimateTokens(fixedChars) - ANSWER_RESERVE));
}

/** How to give each kind of server a larger context (16384 tokens as the example). */
const RAISE: Record<ServerKind, string> = {
	ollama: 'start Ollama with OLLAMA_CONTEXT_LENGTH=16384 (or PARAMETER num_ctx 16384 in a Modelfile), then set NOMOS_CONTEXT_TOKENS to the same number',
	llamacpp: 'start llama-server with -c 16384 (--ctx-size; per slot: divide by --parallel), then set NOMOS_CONTEXT_TOKENS to the same number',
	vllm: 'start vLLM with --max-model-len 16384 (Nomos reads it from the server)',
	other: "raise the context length in the model server's settings, then set NOMOS_CONTEXT_TOKENS to the same number"
};

/**
 * Windows servers run at unless told otherwise (Ollama's 2048/4096/8192 defaults across versions
 * and memory sizes, llama.cpp builds and model cards' 2048/4096): a prompt reported at exactly one
 * of them, while more was sent, was cut there.
 */
export const KNOWN_CAPS = [2048, 4096, 8192];

/** The note: its full text, and for the chat's one-line form a summary (`data.summary`). */
export type TruncationNote = { text: string; data: { server: ServerKind; read: number; sent: number; summary: string } };

/**
 * When the server reports far fewer prompt tokens than were sent, or exactly a known cap (or its
 * window) while clearly more was sent, it cut the conversation from the front, usually with the
 * system prompt and tools: say so, for the kind of server that is configured, and how to raise
 * the limit there. `sentTokens`: the request as sent, in o200k tokens (prompt-tokens.ts). Null
 * when it looks fine.
 */
export function truncationWarning(
	sentTokens: number,
	reportedTokens: number | undefined,
	windowTokens: number | null,
	server: ServerKind = 'other'
): TruncationNote | null {
	if (!reportedTokens) return null;
	const sent = Math.round(sentTokens);
	// Local tokenizers land within ~15 % of o200k: "clearly longer" is beyond that.
	const caps = windowTokens ? [...KNOWN_CAPS, windowTokens] : KNOWN_CAPS;
	const atCap = caps.includes(reportedTokens) && sent > reportedTokens * 1.15;
	const overWindow = windowTokens !== null && reportedTokens >= windowTokens && sent > windowTokens;
	if (!atCap && !overWindow && reportedTokens > sent * 0.6) return null;
	const who = server === 'other' ? 'The model server' : `The model server (${SERVER_NAMES[server]})`;
	return {
		text:
			`${who} read only ${reportedTokens} prompt tokens of about ${sent} sent: it cut the start of the conversation ` +
			`(the instructions and tool definitions with it), so answers may ignore them. To raise the model's context, ${RAISE[server]}.`,
		data: {
			server,
			read: reportedTokens,
			sent,
			summary: `The context was cut: ${server === 'other' ? 'the model server' : SERVER_NAMES[server]} read ${reportedTokens} of about ${sent} prompt tokens.`
		}
	};
}
