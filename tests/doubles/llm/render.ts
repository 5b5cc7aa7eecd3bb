/** Turns a ScriptedResponse into real OpenAI Chat Completions wire output (SSE or JSON). */
import type { ServerResponse } from 'node:http';
import type { ChatRequestBody, Dialect, ScriptedResponse, ScriptedUsage } from './types';
import { promptParts } from '../../../src/lib/server/agent/prompt-tokens';

interface PlannedToolCall {
	id: string;
	name: string;
	arguments: string;
}

/** Normalized completion: what to say, how to pace it, and whether to kill the socket halfway. */
interface Plan {
	text: string;
	chunkSize: number;
	toolCalls: PlannedToolCall[];
	delayMs: number;
	/** Characters of tool-call arguments per streamed delta (default ARGS_CHUNK_SIZE). */
	argsChunkSize?: number;
	/** Destroy the socket after this many SSE chunks (or halfway through the JSON body). */
	cutAfterChunks?: number;
	usage?: ScriptedUsage;
}

export interface RenderContext {
	res: ServerResponse;
	body: ChatRequestBody;
	/** Unique per request; used for completion / tool-call ids. */
	seq: number;
	/** Aborted when the server closes: pending delays end early. */
	signal: AbortSignal;
	/** Called for `hang`: the server keeps the response open until reset()/close(). */
	onHang(res: ServerResponse): void;
	dialect?: Dialect;
	/** Ollama-style context limit: reported prompt_tokens never exceed it. */
	contextTokens?: number | null;
	/** Called with each streamed chunk just before it is written (benches time the model's stream by it). */
	onChunk?(chunk: object): void;
}

const ARGS_CHUNK_SIZE = 8;
const CUT_TEXT = 'This answer will be cut off in the middle of a sentence because the connection';

export function sendJson(res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
	const data = JSON.stringify(payload);
	res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
	res.end(data);
}

export function openAiError(message: string, type: string, code: string | null = null) {
	return { error: { message, type, param: null, code } };
}

export async function render(response: ScriptedResponse, ctx: RenderContext): Promise<void> {
	if ('fault' in response) {
		switch (response.fault) {
			case 'http500':
				return sendJson(ctx.res, 500, openAiError('The server had an error while processing your request. (scripted)', 'server_error'));
			case 'http429':
				return sendJson(ctx.res, 429, openAiError('Rate limit reached for requests. (scripted)', 'requests', 'rate_limit_exceeded'), {
					'retry-after': String(response.retryAfter ?? 0),
					'retry-after-ms': String((response.retryAfter ?? 0) * 1000)
				});
			case 'hang':
				return ctx.onHang(ctx.res);
			case 'empty':
				return emit({ text: '', chunkSize: 8, toolCalls: [], delayMs: 0 }, ctx);
			case 'malformed-tool-json': {
				const name = ctx.body.tools?.[0]?.function.name ?? 'unknown_tool';
				const toolCalls = [{ id: `call_scripted_${ctx.seq}_0`, name, arguments: '{"malformed": tru, "unterminated": "' }];
				return emit({ text: '', chunkSize: 8, toolCalls, delayMs: 0 }, ctx);
			}
			case 'no-tools':
				// Ollama's answer for a model without tool support (an HTTP 400).
				return sendJson(ctx.res, 400, openAiError(`registry.ollama.ai/library/${ctx.body.model ?? 'scripted'}:latest does not support tools`, 'api_error'));
			case 'cut-midway':
				return emit({ text: CUT_TEXT, chunkSize: 16, toolCalls: [], delayMs: 0, cutAfterChunks: 3 }, ctx);
		}
	}
	// A cold model load: the server says nothing until the model is in memory.
	if (response.loadMs) await sleep(response.loadMs, ctx.signal);
	if (ctx.res.destroyed) return;
	if ('toolCalls' in response && response.asText) {
		const written = response.toolCalls.map((call) => ({
			name: call.name,
			arguments: typeof call.args === 'string' ? JSON.parse(call.args) : (call.args ?? {})
		}));
		const text =
			response.asText === 'tag'
				? written.map((w) => `<tool_call>\n${JSON.stringify(w)}\n</tool_call>`).join('\n')
				: JSON.stringify(written.length === 1 ? written[0] : written);
		return emit(
			{ text: (response.text ? `${response.text}\n\n` : '') + text, chunkSize: 8, toolCalls: [], delayMs: response.delayMs ?? 0, usage: response.usage },
			ctx
		);
	}
	if ('toolCalls' in response) {
		const toolCalls = response.toolCalls.map((call, i) => ({
			id: call.id ?? `call_scripted_${ctx.seq}_${i}`,
			name: call.name,
			arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args ?? {})
		}));
		return emit(
			{ text: response.text ?? '', chunkSize: 8, toolCalls, delayMs: response.delayMs ?? 0, argsChunkSize: response.argsChunkSize, usage: response.usage },
			ctx
		);
	}
	return emit({ text: response.text, chunkSize: response.chunkSize ?? 8, toolCalls: [], delayMs: response.delayMs ?? 0, usage: response.usage }, ctx);
}

function emit(plan: Plan, ctx: RenderContext): Promise<void> {
	return ctx.body.stream === true ? streamPlan(plan, ctx) : jsonPlan(plan, ctx);
}

function split(text: string, size: number): string[] {
	const out: string[] = [];
	for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
	return out;
}

function usage(plan: Plan, body: ChatRequestBody, ctx?: RenderContext) {
	// As a real server counts: the whole templated prompt, tool definitions included (in o200k).
	const sent = promptParts(body).total;
	const estimate = ctx?.contextTokens ? Math.min(sent, ctx.contextTokens) : sent;
	const prompt_tokens = plan.usage?.promptTokens ?? estimate;
	const outChars = plan.text.length + plan.toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, 0);
	const completion_tokens = plan.usage?.completionTokens ?? Math.ceil(outChars / 4);
	// As api.openai.com: the cached part of the prompt (counted in prompt_tokens) in its details.
	const cached_tokens = Math.min(plan.usage?.cachedTokens ?? 0, prompt_tokens);
	return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens, prompt_tokens_details: { cached_tokens, audio_tokens: 0 } };
}

const finishReason = (plan: Plan) => (plan.toolCalls.length > 0 ? 'tool_calls' : 'stop');

async function jsonPlan(plan: Plan, ctx: RenderContext): Promise<void> {
	await sleep(plan.delayMs, ctx.signal);
	const message = {
		role: 'assistant',
		content: plan.text.length > 0 || plan.toolCalls.length === 0 ? plan.text : null,
		refusal: null,
		...(plan.toolCalls.length > 0 && {
			tool_calls: plan.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }))
		})
	};
	const payload = {
		id: `chatcmpl-scripted-${ctx.seq}`,
		object: 'chat.completion',
		created: Math.floor(Date.now() / 1000),
		model: ctx.body.model ?? 'scripted',
		choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(plan) }],
		usage: usage(plan, ctx.body, ctx)
	};
	if (plan.cutAfterChunks === undefined) return sendJson(ctx.res, 200, payload);
	const data = JSON.stringify(payload);
	ctx.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
	await write(ctx.res, data.slice(0, Math.floor(data.length / 2)));
	await cut(ctx.res);
}

async function streamPlan(plan: Plan, ctx: RenderContext): Promise<void> {
	const { res } = ctx;
	const base = {
		id: `chatcmpl-scripted-${ctx.seq}`,
		object: 'chat.completion.chunk',
		created: Math.floor(Date.now() / 1000),
		model: ctx.body.model ?? 'scripted'
	};
	const dialect = ctx.dialect ?? 'openai';
	const extra = dialect === 'ollama' || dialect === 'ollama-no-stream-tools' ? { system_fingerprint: 'fp_ollama' } : {};
	const chunk = (delta: object, finish_reason: string | null = null, more: object = {}) => ({
		...base,
		...extra,
		choices: [{ index: 0, delta, logprobs: null, finish_reason, ...more }]
	});

	const chunks: object[] = [];
	const toolsOffered = (ctx.body.tools?.length ?? 0) > 0;
	if (dialect === 'ollama-no-stream-tools' && toolsOffered && plan.toolCalls.length) {
		// The streamed tool calls are lost: an empty answer that says it stopped.
		chunks.push(chunk({ role: 'assistant', content: '' }), chunk({}, 'stop'));
	} else if (dialect === 'ollama' || dialect === 'ollama-no-stream-tools') {
		for (const piece of split(plan.text, plan.chunkSize)) chunks.push(chunk({ role: 'assistant', content: piece }));
		// Every tool call whole in one chunk, each with index 0.
		for (const call of plan.toolCalls) {
			chunks.push(
				chunk({
					role: 'assistant',
					content: '',
					tool_calls: [{ id: call.id, index: 0, type: 'function', function: { name: call.name, arguments: call.arguments } }]
				})
			);
		}
		chunks.push(chunk({ role: 'assistant', content: '' }, finishReason(plan)));
	} else {
		// Same shape as api.openai.com: a role chunk with empty content, content deltas, then tool-call deltas.
		const hasText = plan.text.length > 0 || plan.toolCalls.length === 0;
		if (hasText) chunks.push(chunk({ role: 'assistant', content: '', refusal: null }));
		for (const piece of split(plan.text, plan.chunkSize)) chunks.push(chunk({ content: piece }));
		plan.toolCalls.forEach((call, index) => {
			const pieces = split(call.arguments, plan.argsChunkSize ?? ARGS_CHUNK_SIZE);
			// llama.cpp starts the arguments in the same delta as the name.
			const first = dialect === 'llamacpp' ? (pieces.shift() ?? '') : '';
			const head = { index, id: call.id, type: 'function', function: { name: call.name, arguments: first } };
			chunks.push(chunk(index === 0 && !hasText ? { role: 'assistant', content: null, tool_calls: [head] } : { tool_calls: [head] }));
			for (const piece of pieces) chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
		});
		chunks.push(chunk({}, finishReason(plan), dialect === 'vllm' ? { stop_reason: null } : {}));
		if (dialect === 'llamacpp') Object.assign(chunks[chunks.length - 1], { timings: { prompt_n: 1, predicted_n: 1, predicted_per_second: 40 } });
	}
	if (ctx.body.stream_options?.include_usage) chunks.push({ ...base, choices: [], usage: usage(plan, ctx.body, ctx) });

	res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
	res.flushHeaders();
	for (const [i, c] of chunks.entries()) {
		if (plan.cutAfterChunks !== undefined && i >= plan.cutAfterChunks) return cut(res);
		if (i > 0) await sleep(plan.delayMs, ctx.signal);
		if (res.destroyed) return;
		ctx.onChunk?.(c);
		await write(res, `data: ${JSON.stringify(c)}\n\n`);
	}
	if (res.destroyed) return;
	await write(res, 'data: [DONE]\n\n');
	res.end();
}

function write(res: ServerResponse, data: string): Promise<void> {
	return new Promise((resolve) => {
		if (res.destroyed) return resolve();
		const done = () => {
			res.off('close', done);
			resolve();
		};
		res.once('close', done);
		res.write(data, done);
	});
}

/** Let the already-written bytes reach the client, then kill the TCP connection without a proper end. */
async function cut(res: ServerResponse): Promise<void> {
	await sleep(20);
	res.destroy();
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	if (ms <= 0 || signal?.aborted) return Promise.resolve();
	return new Promise((resolve) => {
		const done = () => {
			clearTimeout(timer);
			signal?.removeEventListener('abort', done);
			resolve();
		};
		const timer = setTimeout(done, ms);
		signal?.addEventListener('abort', done, { once: true });
	});
}
