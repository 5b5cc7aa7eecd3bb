/**
 * Shared types (and the zod schemas that validate control-API input) for the
 * scripted OpenAI-compatible LLM test double. No runtime deps beyond zod, so
 * `client.ts` can import it from any process.
 */
import { z } from 'zod';

export type FaultKind = 'http500' | 'http429' | 'empty' | 'malformed-tool-json' | 'cut-midway' | 'hang' | 'no-tools';

/**
 * Whose stream shape the double speaks (taken from each server's docs and issue trackers):
 * - `openai`: api.openai.com (role chunk, content deltas, tool calls with increasing `index`,
 *   arguments in small pieces).
 * - `ollama`: each tool call whole in one chunk, every one with `index: 0` (ollama/ollama#15457),
 *   `system_fingerprint: "fp_ollama"`; `prompt_tokens` capped at `contextTokens` like its silent
 *   front truncation.
 * - `ollama-no-stream-tools`: older Ollama builds that drop streamed tool calls when tools are
 *   offered (empty content, `finish_reason: "stop"`, ollama/ollama#9632, #12557); non-streamed
 *   answers carry them.
 * - `llamacpp`: llama.cpp's server: OpenAI-like, first tool delta carries name and the start of the
 *   arguments, a `timings` object in the last chunk.
 * - `vllm`: vLLM: OpenAI-like with `stop_reason` on the final chunk and `max_model_len` in /v1/models.
 */
export type Dialect = 'openai' | 'ollama' | 'ollama-no-stream-tools' | 'llamacpp' | 'vllm';
export const dialects: Dialect[] = ['openai', 'ollama', 'ollama-no-stream-tools', 'llamacpp', 'vllm'];

/**
 * The usage a completion reports (OpenAI's `usage`, in the stream's last chunk when the client
 * asks with `stream_options.include_usage`). Unset fields are estimated from the request and the
 * answer (prompt: o200k tokens of the messages and tool definitions, as servers count them; completion:
 * 4 characters a token); `cachedTokens` (`prompt_tokens_details.cached_tokens`) is 0 unless set.
 */
export interface ScriptedUsage {
	promptTokens?: number;
	completionTokens?: number;
	cachedTokens?: number;
}

/** Plain assistant text, streamed in `chunkSize`-char deltas (default 8), `delayMs` apart (default 0). */
export interface TextResponse {
	text: string;
	chunkSize?: number;
	delayMs?: number;
	/** A cold model load: nothing at all (not even headers) for this long before the answer. */
	loadMs?: number;
	usage?: ScriptedUsage;
}

export interface ScriptedToolCall {
	name: string;
	/** Serialized with JSON.stringify; a string is sent verbatim as the raw arguments text. Default `{}`. */
	args?: unknown;
	id?: string;
}

/** Optional text first, then the tool calls (finish_reason 'tool_calls'). */
export interface ToolCallsResponse {
	toolCalls: ScriptedToolCall[];
	text?: string;
	delayMs?: number;
	/** As TextResponse.loadMs. */
	loadMs?: number;
	/** Characters of arguments per streamed delta (default 8); large for huge arguments. */
	argsChunkSize?: number;
	/**
	 * Write the calls as text in `content` instead of `tool_calls`, as qwen3 on some Ollama builds
	 * does: `tag` is its template's `<tool_call>{"name":…,"arguments":{…}}</tool_call>` per call,
	 * `json` a bare `{"name":…,"arguments":{…}}` (an array for several).
	 */
	asText?: 'tag' | 'json';
	usage?: ScriptedUsage;
}

export interface FaultResponse {
	fault: FaultKind;
	/** For http429: the Retry-After header, in seconds (default 0). */
	retryAfter?: number;
}

export type ScriptedResponse = TextResponse | ToolCallsResponse | FaultResponse;

export interface ChatMessage {
	role: string;
	content?: string | Array<{ type: string; text?: string }> | null;
	tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
	tool_call_id?: string;
	name?: string;
}

/** The (loosely typed) Chat Completions request body as the client sent it. */
export interface ChatRequestBody {
	model?: string;
	messages?: ChatMessage[];
	stream?: boolean;
	stream_options?: { include_usage?: boolean } | null;
	tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: unknown } }>;
	[key: string]: unknown;
}

export type ResponseSource = 'queue' | 'fallback' | 'exhausted';

export interface RecordedRequest {
	/** 0-based, in arrival order. */
	seq: number;
	method: string;
	path: string;
	/** Parsed JSON body; null when there was none (GET) or it was not valid JSON. */
	body: ChatRequestBody | null;
	/** Epoch milliseconds. */
	receivedAt: number;
	/** Where the answer came from (chat completions only). */
	source?: ResponseSource;
	response?: ScriptedResponse;
	/** Set when the double could not answer as scripted: tests should treat it as a failure. */
	error?: 'script-exhausted' | 'invalid-json';
}

/** Returning null/undefined means "no answer" and is treated like an exhausted script. */
export type Fallback = (req: RecordedRequest) => ScriptedResponse | null | undefined;

export interface FallbackRule {
	/** The last message with role 'user' contains this substring. */
	whenLastUserIncludes?: string;
	whenLastMessageRole?: 'user' | 'tool' | 'system' | 'assistant';
	/** Any message (content or tool-call name/arguments) contains this substring. */
	whenAnyMessageIncludes?: string;
	/**
	 * A regular expression (JavaScript syntax, no flags) the last message's text must match. Its
	 * capture groups fill `$1` … `$9` in every string of `respond` (tool-call args included), so
	 * one rule answers many concurrent conversations, each with its own values.
	 */
	whenLastMessageMatches?: string;
	respond: ScriptedResponse;
}

export interface ScriptedLlmState {
	/** Queued responses not consumed yet. */
	pending: number;
	hasFallback: boolean;
	requestCount: number;
	/** Number of recorded requests carrying an `error` flag. */
	errorCount: number;
}

const faultKinds = ['http500', 'http429', 'empty', 'malformed-tool-json', 'cut-midway', 'hang', 'no-tools'] as const;

export const dialectBodySchema = z.strictObject({
	dialect: z.enum(['openai', 'ollama', 'ollama-no-stream-tools', 'llamacpp', 'vllm']),
	contextTokens: z.number().int().min(256).nullable().optional()
});
const delayMs = z.number().int().min(0).max(60_000).optional();
const tokens = z.number().int().min(0).optional();
const usage = z.strictObject({ promptTokens: tokens, completionTokens: tokens, cachedTokens: tokens }).optional();

export const scriptedResponseSchema: z.ZodType<ScriptedResponse> = z.union([
	z.strictObject({ text: z.string(), chunkSize: z.number().int().min(1).optional(), delayMs, loadMs: delayMs, usage }),
	z.strictObject({
		toolCalls: z.array(z.strictObject({ name: z.string().min(1), args: z.unknown(), id: z.string().optional() })),
		text: z.string().optional(),
		delayMs,
		loadMs: delayMs,
		argsChunkSize: z.number().int().min(1).optional(),
		asText: z.enum(['tag', 'json']).optional(),
		usage
	}),
	z.strictObject({ fault: z.enum(faultKinds), retryAfter: z.number().min(0).max(3600).optional() })
]);

export const pushBodySchema = z.union([scriptedResponseSchema, z.array(scriptedResponseSchema)]);

export const fallbackRuleSchema: z.ZodType<FallbackRule> = z.strictObject({
	whenLastUserIncludes: z.string().optional(),
	whenLastMessageRole: z.enum(['user', 'tool', 'system', 'assistant']).optional(),
	whenAnyMessageIncludes: z.string().optional(),
	whenLastMessageMatches: z
		.string()
		.max(1000)
		.refine((src) => {
			try {
				new RegExp(src);
				return true;
			} catch {
				return false;
			}
		}, 'not a valid regular expression')
		.optional(),
	respond: scriptedResponseSchema
});

export const fallbackBodySchema = z.union([z.null(), z.strictObject({ rules: z.array(fallbackRuleSchema).nullable() })]);
