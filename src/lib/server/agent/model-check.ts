import { asSchema, generateText, streamText, tool, type LanguageModel } from 'ai';
import { promptParts } from './prompt-tokens';
import { turnInstructions } from './soul';
import { buildTools } from './tools/index';
import { z } from 'zod';
import { env } from '../env';
import { forgetContextWindow, readServerFacts, SERVER_NAMES, type ServerKind } from './context-budget';
import { sql } from '../db/index';
import { latestContextCut, type ContextCutNote } from '../db/queries/messages';
import { describeModelError } from './model-errors';
import { getModel } from './provider';

export type ProbeResult = { name: string; ok: boolean; detail: string; ttftMs?: number; tokensPerSec?: number };
export type ModelCheck = {
	baseURL: string | null;
	model: string | null;
	/** Models the server lists (null when it would not say). */
	models: string[] | null;
	listed: boolean | null;
	context: { tokens: number | null; source: string };
	/** Which server answers, as its metadata tells ('other' when it does not say). */
	server: ServerKind;
	/** The window the model was trained for, when the server says (Ollama's model_info). */
	trained: number | null;
	/** Whether the server reuses the shared start of consecutive prompts (null: unknown). */
	cache: { caches: boolean | null; detail: string };
	/** The newest note of a turn whose prompt the server cut, with how to fix it (null: none seen). */
	cut: ContextCutNote | null;
	/** The first request of a turn (instructions and tools, before any words), in o200k tokens, and the room a conversation has in the window. */
	prompt: PromptFit;
	probes: ProbeResult[];
};

export type PromptFit = { instructions: number; tools: number; total: number; window: number | null; room: number | null; fits: boolean | null };

/** What every turn sends before the conversation: the instructions and the tool definitions as the server receives them. */
export async function promptFit(window: number | null): Promise<PromptFit> {
	const tools = buildTools({
		sessionId: 'check',
		messageId: 'check',
		signal: new AbortController().signal,
		turn: { httpGets: 0 },
		contextTokens: window ?? undefined
	});
	const definitions = await Promise.all(
		Object.keys(tools).map(async (name) => ({
			type: 'function',
			function: { name, description: tools[name].description, parameters: await asSchema(tools[name].inputSchema).jsonSchema }
		}))
	);
	const parts = promptParts({ messages: [{ role: 'system', content: await turnInstructions() }], tools: definitions });
	const room = window === null ? null : window - parts.total;
	return { instructions: parts.instructions, tools: parts.tools, total: parts.total, window, room, fits: room === null ? null : room > 0 };
}

const echo = tool({
	description: 'Echo a word back. Used to check that tool calls work.',
	inputSchema: z.object({ word: z.string().max(40) }).strict(),
	execute: async ({ word }) => ({ word })
});
const PROBE_TIMEOUT_MS = 60_000;

/** The server's model list (`GET /models`), or null. */
export async function listServerModels(): Promise<string[] | null> {
	const config = env();
	if (!config.OPENAI_BASE_URL) return null;
	try {
		const r = await fetch(`${config.OPENAI_BASE_URL.replace(/\/$/, '')}/models`, {
			headers: config.OPENAI_API_KEY ? { authorization: `Bearer ${config.OPENAI_API_KEY}` } : undefined,
			signal: AbortSignal.timeout(5000)
		});
		if (!r.ok) return null;
		const list = (await r.json()) as { data?: Array<{ id?: string }> };
		return (list.data ?? []).map((m) => m.id ?? '').filter(Boolean);
	} catch {
		return null;
	}
}

async function probe(name: string, model: LanguageModel, calls: number, stream: boolean): Promise<ProbeResult> {
	const prompt =
		calls === 1
			? 'Call the echo tool once with the word "ping". Do not answer in text.'
			: 'Call the echo tool twice in parallel, in one reply: once with the word "alpha" and once with "beta". Do not answer in text.';
	const started = Date.now();
	try {
		let ttft: number | undefined;
		let toolCalls: Array<{ toolName: string; input: unknown }>;
		let outTokens: number | undefined;
		if (stream) {
			const r = streamText({ model, prompt, tools: { echo }, toolChoice: 'required', maxRetries: 0, abortSignal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
			const seen: Array<{ toolName: string; input: unknown }> = [];
			for await (const part of r.fullStream) {
				if (ttft === undefined && ['text-delta', 'tool-input-start', 'tool-call'].includes(part.type)) ttft = Date.now() - started;
				if (part.type === 'tool-call') seen.push({ toolName: part.toolName, input: part.input });
				if (part.type === 'error') throw part.error;
				if (part.type === 'finish-step') outTokens = part.usage?.outputTokens;
			}
			toolCalls = seen;
		} else {
			const r = await generateText({
				model,
				prompt,
				tools: { echo },
				toolChoice: 'required',
				maxRetries: 0,
				abortSignal: AbortSignal.timeout(PROBE_TIMEOUT_MS)
			});
			toolCalls = r.steps[0]?.toolCalls.map((c) => ({ toolName: c.toolName, input: c.input })) ?? [];
			outTokens = r.steps[0]?.usage.outputTokens;
		}
		const seconds = (Date.now() - started) / 1000;
		const tokensPerSec = outTokens && seconds > 0 ? Math.round((outTokens / seconds) * 10) / 10 : undefined;
		const echoes = toolCalls.filter((c) => c.toolName === 'echo');
		const ok = echoes.length >= calls;
		const detail = ok
			? `${echoes.length} tool call${echoes.length === 1 ? '' : 's'}: ${echoes.map((c) => JSON.stringify(c.input)).join(', ')}`
			: toolCalls.length
				? `expected ${calls} echo calls, got ${echoes.length}: ${JSON.stringify(toolCalls).slice(0, 200)}`
				: 'no tool call came back' + (stream ? ' (this server may drop streamed tool calls: set NOMOS_MODEL_STREAM_TOOLS=off)' : '');
		return { name, ok, detail, ttftMs: ttft, tokensPerSec };
	} catch (e) {
		return { name, ok: false, detail: describeModelError(e) };
	}
}

/**
 * What works with the configured model server: its model list, the context window it reports,
 * and four tiny probes (one tool call and two parallel ones, streamed and not) with time to
 * first token and tokens/s. `probe: false` skips the probes (no tokens spent), e.g. at start.
 */
export async function checkModel(opts: { probe: boolean }): Promise<ModelCheck> {
	const config = env();
	// Turns re-read the window after a check (the operator may just have changed the server).
	forgetContextWindow();
	const [models, facts, cut] = await Promise.all([listServerModels(), readServerFacts(), latestContextCut(sql())]);
	const context = { tokens: facts.tokens, source: facts.source };
	const model = getModel();
	const out: ModelCheck = {
		baseURL: config.OPENAI_BASE_URL ?? null,
		model: config.NOMOS_MODEL ?? null,
		models,
		listed: models && config.NOMOS_MODEL ? models.includes(config.NOMOS_MODEL) : null,
		context,
		server: facts.server,
		trained: facts.trained ?? null,
		cache: promptCache(facts.server, facts.cachePrompt),
		cut,
		prompt: await promptFit(context.tokens),
		probes: []
	};
	if (!model || !opts.probe) return out;
	out.probes.push(await probe('one tool call, streamed', model, 1, true));
	out.probes.push(await probe('two parallel tool calls, streamed', model, 2, true));
	out.probes.push(await probe('one tool call, not streamed', model, 1, false));
	out.probes.push(await probe('two parallel tool calls, not streamed', model, 2, false));
	return out;
}

/**
 * Whether the server reuses the shared start of consecutive prompts (so a turn re-reads only
 * what is new): Ollama keeps the loaded model's KV cache; llama.cpp does per slot unless
 * `cache_prompt` is off; vLLM only with --enable-prefix-caching, which it does not report.
 */
function promptCache(server: ServerKind, cachePrompt: boolean | undefined): { caches: boolean | null; detail: string } {
	switch (server) {
		case 'ollama':
			return {
				caches: true,
				detail: "Ollama keeps the loaded model's KV cache and reuses the shared start of the prompt while the model stays loaded (OLLAMA_KEEP_ALIVE)"
			};
		case 'llamacpp':
			if (cachePrompt === false) return { caches: false, detail: 'llama.cpp lists cache_prompt off: every request re-reads the whole prompt' };
			if (cachePrompt === true) return { caches: true, detail: 'llama.cpp lists cache_prompt on: each slot reuses the shared start of the prompt' };
			return { caches: null, detail: 'unknown: llama.cpp did not list cache_prompt in /props' };
		case 'vllm':
			return { caches: null, detail: 'unknown: vLLM caches prefixes only with --enable-prefix-caching, which it does not report' };
		default:
			return { caches: null, detail: `unknown: ${SERVER_NAMES[server]} does not say` };
	}
}

/** One line for the start-up log. */
export function describeCheck(c: ModelCheck): string {
	if (!c.baseURL || !c.model) return 'model: not configured (set OPENAI_BASE_URL and NOMOS_MODEL)';
	const list =
		c.models === null
			? 'the server did not list its models'
			: c.listed
				? `"${c.model}" is among the ${c.models.length} it serves`
				: `"${c.model}" is NOT among the ${c.models.length} it serves (${c.models.slice(0, 5).join(', ')})`;
	const ctx = c.context.tokens ? `context ${c.context.tokens} tokens (${c.context.source})` : 'context window unknown (set NOMOS_CONTEXT_TOKENS)';
	const cache = c.cache.caches === null ? 'prompt cache unknown' : c.cache.caches ? 'caches prompts' : 'does not cache prompts';
	return `model: ${c.baseURL}, ${list}; ${ctx}; ${cache}`;
}
