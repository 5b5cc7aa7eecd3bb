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

type Asked = { tokens: number | null; source: string; server: ServerKind };
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
	const config = env();
	if (config.NOMOS_CONTEXT_TOKENS) return { tokens: config.NOMOS_CONTEXT_TOKENS, source: 'NOMOS_CONTEXT_TOKENS' };
	const { tokens, source } = await askServer(config.OPENAI_BASE_URL, config.NOMOS_MODEL, config.OPENAI_API_KEY);
	return { tokens, source };
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
	if (server !== 'other') return { tokens: null, source: 'unknown', server };
	try {
		const root = baseURL.replace(/\/v1\/?$/, '');
		const r = await fetch(`${root}/api/show`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }), signal });
		if (r.ok) {
			const show = (await r.json()) as { parameters?: string };
			const numCtx = /(?:^|\n)\s*num_ctx\s+(\d+)/.exec(show.parameters ?? '')?.[1];
			return numCtx
				? { tokens: Number(numCtx), source: "Ollama (the model's num_ctx)", server: 'ollama' }
				: { tokens: OLLAMA_DEFAULT_CTX, source: "Ollama's default for its OpenAI endpoint", server: 'ollama' };
		}
	} catch {
		/* not Ollama */
	}
	return { tokens: null, source: 'unknown', server: 'other' };
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
	llamacpp: 'start llama-server with --ctx-size 16384 (per slot: divide by --parallel), then set NOMOS_CONTEXT_TOKENS to the same number',
	vllm: 'start vLLM with --max-model-len 16384 (Nomos reads it from the server)',
	other: "raise the context length in the model server's settings, then set NOMOS_CONTEXT_TOKENS to the same number"
};

/** The note: its full text, and for the chat's one-line form a summary (`data.summary`). */
export type TruncationNote = { text: string; data: { server: ServerKind; read: number; sent: number; summary: string } };

/**
 * When the server reports far fewer prompt tokens than were sent (or exactly its window), it cut
 * the conversation from the front, usually with the system prompt and tools: say so, for the
 * kind of server that is configured, and how to raise the limit there. Null when it looks fine.
 */
export function truncationWarning(
	sentChars: number,
	reportedTokens: number | undefined,
	windowTokens: number | null,
	server: ServerKind = 'other'
): TruncationNote | null {
	if (!reportedTokens) return null;
	const sent = estimateTokens(sentChars);
	const atCap = windowTokens !== null && reportedTokens >= windowTokens && sent > windowTokens;
	if (!atCap && reportedTokens > sent * 0.6) return null;
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
