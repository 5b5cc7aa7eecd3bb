/**
 * Scripted OpenAI-compatible Chat Completions server (test double), node:http only.
 * Point the real client at it: `createOpenAI({ baseURL: llm.baseURL, apiKey: 'test' }).chat('scripted')`.
 *
 * OpenAI API (base http://127.0.0.1:PORT/v1):
 *   POST /v1/chat/completions  answers with the next queued ScriptedResponse (FIFO); when the queue is
 *                              empty, with the fallback; with neither, with the text "(script exhausted)"
 *                              and the recorded request gets `error: 'script-exhausted'`.
 *                              Honours `stream` (SSE chat.completion.chunk ... [DONE]) and
 *                              `stream_options.include_usage` (final usage chunk, with
 *                              `prompt_tokens_details.cached_tokens`; @ai-sdk/openai always asks).
 *   GET  /v1/models            a models list (vLLM: with max_model_len; llama.cpp/vLLM: named in owned_by).
 *   GET  /props                llama.cpp dialect: default_generation_settings.n_ctx and params.cache_prompt.
 *   POST /api/show             Ollama dialects: model_info.*.context_length and parameters' num_ctx.
 * ScriptedResponse (see types.ts):
 *   { text, chunkSize?=8, delayMs?=0, usage? }     text in chunkSize-char deltas, delayMs apart
 *       loadMs (text and toolCalls): a cold model load, nothing at all (no headers) for that long first
 *   { toolCalls: [{ name, args?, id? }], text?, delayMs?, usage? }   args: JSON value, or a string sent raw
 *       usage: { promptTokens?, completionTokens?, cachedTokens? } reported instead of the estimate
 *       asText: 'tag' | 'json': the calls written in `content` (qwen3's <tool_call> or bare JSON)
 *   { fault: 'http500' | 'http429' | 'empty' | 'malformed-tool-json' | 'cut-midway' | 'hang' }
 *       http500/http429: OpenAI error JSON (429 has retry-after: 0); empty: no content, finish 'stop';
 *       malformed-tool-json: call to the request's first tool with invalid JSON arguments;
 *       cut-midway: a few text chunks, then the socket is destroyed; hang: never answers (until reset/close).
 *
 * Control API (same server, for other processes; see client.ts), JSON in and out:
 *   POST /__control/push       body: ScriptedResponse | ScriptedResponse[]        -> { pending }
 *   POST /__control/fallback   body: { rules: FallbackRule[] | null } | null      -> { ok: true }
 *                              FallbackRule = { whenLastUserIncludes?, whenLastMessageRole?,
 *                              whenAnyMessageIncludes?, whenLastMessageMatches?, respond }; all given
 *                              conditions must hold; a `whenLastMessageMatches` regex's groups fill
 *                              `$1` … `$9` in the response's strings;
 *                              first matching rule wins; no match counts as script exhausted.
 *   GET  /__control/requests   RecordedRequest[] ({ seq, method, path, body, receivedAt, source, error? })
 *   GET  /__control/state      { pending, hasFallback, requestCount, errorCount }
 *   POST /__control/reset      clears queue, fallback and log; ends hanging requests.
 *   POST /__control/titles     body: ScriptedResponse | ScriptedResponse[]: answers for Nomos's title
 *                              requests (header `x-nomos-request: title`, sessions/title.ts), kept apart
 *                              from the conversation: not from the queue or the fallback, not in
 *                              `requests`; with none queued, "About: <the operator's first line>".
 *   GET  /__control/titles     the title requests received (RecordedRequest[]).
 * Invalid control bodies get a 400 with the validation error.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openAiError, render, sendJson } from './render';
import { fallbackFromRules } from './rules';
import {
	fallbackBodySchema,
	pushBodySchema,
	dialectBodySchema,
	type Dialect,
	type ChatRequestBody,
	type Fallback,
	type RecordedRequest,
	type ResponseSource,
	type ScriptedLlmState,
	type ScriptedResponse
} from './types';

export type * from './types';
export { fallbackFromRules } from './rules';

export interface ScriptedLlm {
	/** http://127.0.0.1:PORT/v1 */
	baseURL: string;
	port: number;
	push(...responses: ScriptedResponse[]): void;
	setFallback(fn: Fallback | null): void;
	/** Speak another server's stream shape (see Dialect); `contextTokens` caps reported prompt tokens. */
	setDialect(dialect: Dialect, contextTokens?: number | null): void;
	/** Every /v1 request received, in order (live array; reset() empties it in place); title requests are apart. */
	readonly requests: RecordedRequest[];
	/** Nomos's title requests (live array). */
	readonly titleRequests: RecordedRequest[];
	/** Answers for the next title requests (else "About: <the operator's first line>"). */
	pushTitle(...responses: ScriptedResponse[]): void;
	state(): ScriptedLlmState;
	reset(): void;
	close(): Promise<void>;
}

const EXHAUSTED: ScriptedResponse = { text: '(script exhausted)' };
/** The header Nomos's title request carries (src/lib/server/sessions/title.ts TITLE_REQUEST_HEADER). */
const TITLE_HEADER = 'x-nomos-request';

/**
 * `onChunk(seq, chunk)`: called with each streamed chunk (request `seq`) just before it is written,
 * so a bench can time the model's stream from the sender's side.
 */
export async function startScriptedLlm(opts: { port?: number; dialect?: Dialect; onChunk?: (seq: number, chunk: object) => void } = {}): Promise<ScriptedLlm> {
	const queue: ScriptedResponse[] = [];
	const requests: RecordedRequest[] = [];
	const titleQueue: ScriptedResponse[] = [];
	const titleRequests: RecordedRequest[] = [];
	const hanging = new Set<ServerResponse>();
	const lifetime = new AbortController();
	let fallback: Fallback | null = null;
	let seq = 0;
	let dialect: Dialect = opts.dialect ?? 'openai';
	let contextTokens: number | null = null;

	const state = (): ScriptedLlmState => ({
		pending: queue.length,
		hasFallback: fallback !== null,
		requestCount: requests.length,
		errorCount: requests.filter((r) => r.error !== undefined).length
	});

	const reset = () => {
		queue.length = 0;
		requests.length = 0;
		titleQueue.length = 0;
		titleRequests.length = 0;
		seq = 0;
		fallback = null;
		dialect = opts.dialect ?? 'openai';
		contextTokens = null;
		for (const res of hanging) res.destroy();
		hanging.clear();
	};

	const onHang = (res: ServerResponse) => {
		hanging.add(res);
		res.once('close', () => hanging.delete(res));
	};

	async function handleChat(record: RecordedRequest, res: ServerResponse): Promise<void> {
		let response = queue.shift();
		let source: ResponseSource = 'queue';
		if (response === undefined) {
			response = fallback?.(record) ?? undefined;
			source = 'fallback';
		}
		if (response === undefined) {
			response = EXHAUSTED;
			source = 'exhausted';
			record.error = 'script-exhausted';
		}
		Object.assign(record, { source, response });
		const onChunk = opts.onChunk && ((c: object) => opts.onChunk?.(record.seq, c));
		await render(response, { res, body: record.body ?? {}, seq: record.seq, signal: lifetime.signal, onHang, dialect, contextTokens, onChunk });
	}

	/** A title request: answered from its own script (see the header comment), never the conversation's. */
	async function handleTitle(raw: string, res: ServerResponse): Promise<void> {
		const record: RecordedRequest = { seq: titleRequests.length, method: 'POST', path: '/v1/chat/completions', body: null, receivedAt: Date.now() };
		titleRequests.push(record);
		try {
			record.body = JSON.parse(raw) as ChatRequestBody;
		} catch {
			record.error = 'invalid-json';
			return sendJson(res, 400, openAiError('We could not parse the JSON body of your request.', 'invalid_request_error'));
		}
		const prompt = (record.body.messages ?? [])
			.filter((m) => m.role === 'user')
			.map((m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((c) => c.text ?? '').join(' ')))
			.join(' ');
		// The operator's words kept whole, so a test that looks for them finds them under either title.
		const words = /Operator:[ \t]*(.*)/.exec(prompt)?.[1].trim() ?? '';
		const response = titleQueue.shift() ?? { text: `About: ${words}` };
		Object.assign(record, { source: 'queue', response });
		await render(response, { res, body: record.body, seq: record.seq, signal: lifetime.signal, onHang, dialect, contextTokens });
	}

	async function handleControl(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
		const route = `${req.method} ${path}`;
		if (route === 'GET /__control/requests') return sendJson(res, 200, requests);
		if (route === 'GET /__control/state') return sendJson(res, 200, state());
		if (route === 'GET /__control/titles') return sendJson(res, 200, titleRequests);
		if (route === 'POST /__control/reset') {
			reset();
			return sendJson(res, 200, { ok: true });
		}
		if (route !== 'POST /__control/push' && route !== 'POST /__control/titles' && route !== 'POST /__control/fallback' && route !== 'POST /__control/dialect') {
			return sendJson(res, 404, openAiError(`Unknown control route ${route}`, 'invalid_request_error'));
		}
		const raw = await readBody(req);
		let json: unknown;
		try {
			json = raw.trim() === '' ? null : JSON.parse(raw);
		} catch {
			return sendJson(res, 400, openAiError('Body is not valid JSON', 'invalid_request_error'));
		}
		if (route === 'POST /__control/dialect') {
			const parsed = dialectBodySchema.safeParse(json);
			if (!parsed.success) return sendJson(res, 400, { error: parsed.error.issues });
			dialect = parsed.data.dialect;
			contextTokens = parsed.data.contextTokens ?? null;
			return sendJson(res, 200, { ok: true });
		}
		if (route === 'POST /__control/push' || route === 'POST /__control/titles') {
			const parsed = pushBodySchema.safeParse(json);
			if (!parsed.success) return sendJson(res, 400, { error: parsed.error.issues });
			const into = route === 'POST /__control/push' ? queue : titleQueue;
			into.push(...(Array.isArray(parsed.data) ? parsed.data : [parsed.data]));
			return sendJson(res, 200, { pending: into.length });
		}
		const parsed = fallbackBodySchema.safeParse(json);
		if (!parsed.success) return sendJson(res, 400, { error: parsed.error.issues });
		fallback = parsed.data?.rules ? fallbackFromRules(parsed.data.rules) : null;
		return sendJson(res, 200, { ok: true });
	}

	async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const path = new URL(req.url ?? '/', 'http://localhost').pathname;
		if (path.startsWith('/__control/')) return handleControl(req, res, path);

		// Model metadata (what Nomos asks to size its context) is answered but not recorded:
		// `requests` is the conversation.
		if (req.method === 'GET' && path === '/v1/models') {
			// vLLM and llama.cpp's server name themselves in `owned_by`; vLLM also gives its window.
			const owner = dialect === 'vllm' ? 'vllm' : dialect === 'llamacpp' ? 'llamacpp' : 'nomos-tests';
			const model = { id: 'scripted', object: 'model', created: 0, owned_by: owner, ...(dialect === 'vllm' ? { max_model_len: contextTokens ?? 32768 } : {}) };
			return sendJson(res, 200, { object: 'list', data: [model] });
		}
		if (req.method === 'GET' && path === '/props') {
			if (dialect !== 'llamacpp') return sendJson(res, 404, openAiError('Unknown route GET /props', 'invalid_request_error'));
			// llama-server's global properties: the per-slot window (-c / --parallel) and its sampling defaults.
			return sendJson(res, 200, {
				default_generation_settings: {
					id: 0,
					n_ctx: contextTokens ?? 4096,
					is_processing: false,
					params: { n_predict: -1, temperature: 0.8, cache_prompt: true }
				},
				total_slots: 1,
				model_path: '/models/scripted.gguf',
				build_info: 'b0-scripted'
			});
		}
		if (req.method === 'POST' && path === '/api/show') {
			if (!dialect.startsWith('ollama')) return sendJson(res, 404, openAiError('Unknown route POST /api/show', 'invalid_request_error'));
			// Ollama's native model info: the trained context length, and num_ctx when a Modelfile sets it.
			return sendJson(res, 200, {
				model_info: { 'general.architecture': 'qwen2', 'qwen2.context_length': 32768 },
				parameters: contextTokens ? `num_ctx                        ${contextTokens}` : '',
				capabilities: ['completion', 'tools']
			});
		}
		const raw = await readBody(req);
		if (req.method === 'POST' && path === '/v1/chat/completions' && req.headers[TITLE_HEADER] === 'title') return handleTitle(raw, res);
		const record: RecordedRequest = { seq: seq++, method: req.method ?? 'GET', path, body: null, receivedAt: Date.now() };
		requests.push(record);
		if (raw.trim() !== '') {
			try {
				record.body = JSON.parse(raw) as ChatRequestBody;
			} catch {
				record.error = 'invalid-json';
				return sendJson(res, 400, openAiError('We could not parse the JSON body of your request.', 'invalid_request_error'));
			}
		}
		if (req.method === 'POST' && path === '/v1/chat/completions') return handleChat(record, res);
		return sendJson(res, 404, openAiError(`Unknown route ${req.method} ${path}`, 'invalid_request_error'));
	}

	const server = createServer((req, res) => {
		handle(req, res).catch((err: unknown) => {
			if (res.headersSent) return void res.destroy();
			sendJson(res, 500, openAiError(`Scripted LLM double crashed: ${String(err)}`, 'server_error'));
		});
	});
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
	});
	const { port } = server.address() as AddressInfo;

	return {
		baseURL: `http://127.0.0.1:${port}/v1`,
		port,
		push: (...responses) => void queue.push(...responses),
		pushTitle: (...responses) => void titleQueue.push(...responses),
		titleRequests,
		setDialect: (d, ctxTokens) => {
			dialect = d;
			contextTokens = ctxTokens ?? null;
		},
		setFallback: (fn) => void (fallback = fn),
		requests,
		state,
		reset,
		close: () =>
			new Promise<void>((resolve, reject) => {
				lifetime.abort();
				server.close((err) => (err ? reject(err) : resolve()));
				server.closeAllConnections();
			})
	};
}

function readBody(req: IncomingMessage): Promise<string> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		req.on('data', (c: Buffer) => chunks.push(c));
		req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
		req.on('error', reject);
	});
}
