/**
 * A `fetch` for the model provider that smooths over how local OpenAI-compatible servers
 * differ from OpenAI's Chat Completions stream, so the AI SDK's parser sees OpenAI's shape:
 *
 * - **Reused tool-call indices** (Ollama sends every parallel tool call with `index: 0`): a
 *   delta that carries a new `id` on an index already taken by another id gets the next free
 *   index, and later deltas without an id follow it.
 * - **No streaming with tools** (Ollama builds that drop streamed tool calls, or an operator's
 *   choice): when the request carries the NO_STREAM_HEADER, or the model is configured not to
 *   stream with tools, it is sent with `stream: false` and the JSON answer is replayed to the
 *   SDK as an equivalent SSE stream.
 * - **Tool calls written as text** (`<tool_call>{…}</tool_call>` or bare JSON in `content`): sent
 *   on as `tool_calls` when they name offered tools (text-tool-calls.ts), else left as text.
 */

import { parseTextToolCalls, TextToolCallBuffer } from './text-tool-calls';

/** A per-call request header (set by the turn runner) asking for a non-streamed answer. */
export const NO_STREAM_HEADER = 'x-nomos-no-stream';

type ToolCallDelta = { index?: number; id?: string; type?: string; function?: { name?: string; arguments?: string } };
type Chunk = { choices?: Array<{ index?: number; delta?: { tool_calls?: ToolCallDelta[] } & Record<string, unknown> }> } & Record<string, unknown>;

/**
 * The most argument text one streamed tool call may carry. Beyond it the deltas are dropped (the
 * call then fails as invalid JSON, a bounded error): a parser that re-reads the whole argument
 * string on every delta would otherwise spend minutes on a megabyte sent in tiny pieces.
 */
export const MAX_STREAMED_ARGS = 64 * 1024;

/** Rewrites tool-call indices in a stream of chunks (one instance per response). */
export class ToolIndexFixer {
	/** Per choice: the id each index is bound to, and which index the server's index maps to now. */
	#byChoice = new Map<number, { ids: Map<number, string>; current: Map<number, number>; args: Map<number, number> }>();

	/** Fixes indices in place and drops argument text past MAX_STREAMED_ARGS; null when nothing is left to send. */
	fixOrDrop(chunk: Chunk): Chunk | null {
		this.fix(chunk);
		let dropped = false;
		for (const choice of chunk.choices ?? []) {
			const calls = choice.delta?.tool_calls;
			if (!Array.isArray(calls)) continue;
			const st = this.#byChoice.get(choice.index ?? 0)!;
			choice.delta!.tool_calls = calls.filter((call) => {
				const piece = call.function?.arguments;
				if (typeof piece !== 'string' || !piece) return true;
				const index = call.index ?? 0;
				const had = st.args.get(index) ?? 0;
				st.args.set(index, had + piece.length);
				if (had >= MAX_STREAMED_ARGS) {
					dropped = true;
					call.function!.arguments = '';
					return !!call.id; // a head delta (id, name) stays, without more arguments
				}
				if (had + piece.length > MAX_STREAMED_ARGS) call.function!.arguments = piece.slice(0, MAX_STREAMED_ARGS - had);
				return true;
			});
		}
		if (!dropped) return chunk;
		const empty = (chunk.choices ?? []).every((c) => !c.delta?.tool_calls?.length && !c.delta?.content && !(c as { finish_reason?: unknown }).finish_reason);
		return empty && !(chunk as { usage?: unknown }).usage ? null : chunk;
	}

	fix(chunk: Chunk): Chunk {
		for (const choice of chunk.choices ?? []) {
			const calls = choice.delta?.tool_calls;
			if (!Array.isArray(calls)) continue;
			const key = choice.index ?? 0;
			let st = this.#byChoice.get(key);
			if (!st) this.#byChoice.set(key, (st = { ids: new Map(), current: new Map(), args: new Map() }));
			calls.forEach((call, i) => {
				const raw = typeof call.index === 'number' ? call.index : i;
				if (call.id) {
					let target = raw;
					const bound = st.ids.get(target);
					if (bound !== undefined && bound !== call.id) {
						target = Math.max(...st.ids.keys()) + 1;
						while (st.ids.has(target)) target++;
					}
					st.ids.set(target, call.id);
					st.current.set(raw, target);
					call.index = target;
				} else call.index = st.current.get(raw) ?? raw;
			});
		}
		return chunk;
	}
}

/**
 * Turns tool calls written as text in a streamed reply into `tool_calls` deltas (see
 * text-tool-calls.ts); one instance per response. Content that may be such calls is held back
 * until the reply's finish chunk, then sent as calls or, when it is not, as the text it was.
 */
export class TextToolCallRewriter {
	#buffer = new TextToolCallBuffer();
	#realCalls = false;
	#count = 0;
	constructor(private readonly offered: ReadonlySet<string>) {}

	/** The chunks to send for this one (none, it, or calls made from held text before it). */
	rewrite(chunk: Chunk): Chunk[] {
		const choice = chunk.choices?.[0];
		if (!choice || this.offered.size === 0 || this.#realCalls) return [chunk];
		const delta = choice.delta;
		if (delta?.tool_calls?.length) {
			// The server sends proper calls: whatever was held is text, and nothing more is held.
			this.#realCalls = true;
			const held = this.#buffer.end(new Set());
			if (held.text) delta.content = held.text + (typeof delta.content === 'string' ? delta.content : '');
			return [chunk];
		}
		if (delta && typeof delta.content === 'string' && delta.content) delta.content = this.#buffer.push(delta.content);
		const finish = (choice as { finish_reason?: string | null }).finish_reason;
		if (!finish || !this.#buffer.holding) return [chunk];
		const { text, calls } = this.#buffer.end(this.offered);
		if (!calls.length) {
			choice.delta = { ...delta, content: (typeof delta?.content === 'string' ? delta.content : '') + text };
			return [chunk];
		}
		const index = choice.index ?? 0;
		const base = { ...chunk, choices: undefined, usage: undefined };
		const out: Chunk[] = [];
		if (text) out.push({ ...base, choices: [{ index, delta: { content: text } }] });
		out.push({
			...base,
			choices: [
				{
					index,
					delta: {
						tool_calls: calls.map((c, i) => ({
							index: i,
							id: `call_text_${this.#count++}`,
							type: 'function',
							function: { name: c.name, arguments: c.arguments }
						}))
					}
				}
			]
		});
		(choice as { finish_reason?: string }).finish_reason = 'tool_calls';
		out.push(chunk);
		return out;
	}

	/** At the end of the stream without a finish chunk: what is still held, as text. */
	flush(): Chunk[] {
		if (!this.#buffer.holding) return [];
		const { text } = this.#buffer.end(new Set());
		return [{ choices: [{ index: 0, delta: { content: text } }] }];
	}
}

/** The tool names a Chat Completions request offers. */
function offeredTools(json: { tools?: unknown[] }): Set<string> {
	const names = (json.tools ?? []).map((t) => (t as { function?: { name?: unknown } })?.function?.name);
	return new Set(names.filter((n): n is string => typeof n === 'string'));
}

/** Rewrites an SSE body chunk by chunk, passing through anything that is not a JSON data line. */
function fixSseStream(body: ReadableStream<Uint8Array>, offered: ReadonlySet<string>): ReadableStream<Uint8Array> {
	const fixer = new ToolIndexFixer();
	const texts = new TextToolCallRewriter(offered);
	const decoder = new TextDecoder();
	const encoder = new TextEncoder();
	let buffer = '';
	const lines = (chunks: Chunk[]) => chunks.map((c) => `data: ${JSON.stringify(c)}`).join('\n\n');
	const rewrite = (line: string): string | null => {
		if (!line.startsWith('data:')) return line;
		const data = line.slice(5).trim();
		if (!data) return line;
		if (data === '[DONE]') {
			const rest = texts.flush();
			return rest.length ? `${lines(rest)}\n\n${line}` : line;
		}
		try {
			const fixed = fixer.fixOrDrop(JSON.parse(data) as Chunk);
			if (!fixed) return null;
			const out = texts.rewrite(fixed);
			return out.length ? lines(out) : null;
		} catch {
			return line;
		}
	};
	/** Rewritten lines; a dropped data line takes the blank line that ended its event along. */
	const rewriteAll = (lines: string[]) => {
		const out: string[] = [];
		let skipBlank = false;
		for (const line of lines) {
			if (skipBlank && line.trim() === '') {
				skipBlank = false;
				continue;
			}
			const r = rewrite(line);
			if (r === null) skipBlank = true;
			else out.push(r);
		}
		return out;
	};
	return body.pipeThrough(
		new TransformStream<Uint8Array, Uint8Array>({
			transform(bytes, controller) {
				buffer += decoder.decode(bytes, { stream: true });
				const lines = buffer.split('\n');
				buffer = lines.pop() ?? '';
				const out = rewriteAll(lines);
				if (out.length) controller.enqueue(encoder.encode(out.join('\n') + '\n'));
			},
			flush(controller) {
				buffer += decoder.decode();
				const last = buffer ? rewrite(buffer) : null;
				if (last) controller.enqueue(encoder.encode(last));
			}
		})
	);
}

type Completion = {
	id?: string;
	model?: string;
	created?: number;
	choices?: Array<{
		index?: number;
		finish_reason?: string | null;
		message?: {
			role?: string;
			content?: string | null;
			tool_calls?: Array<{ id?: string; type?: string; function?: { name?: string; arguments?: string | object } }>;
		};
	}>;
	usage?: unknown;
};

/** The SSE stream a streaming server would have sent for this complete answer. */
export function completionAsSse(c: Completion): string {
	const base = { id: c.id ?? 'chatcmpl-nomos', object: 'chat.completion.chunk', created: c.created ?? Math.floor(Date.now() / 1000), model: c.model ?? '' };
	const out: string[] = [];
	const send = (o: object) => out.push(`data: ${JSON.stringify(o)}\n\n`);
	for (const choice of c.choices ?? []) {
		const index = choice.index ?? 0;
		const m = choice.message ?? {};
		send({ ...base, choices: [{ index, delta: { role: 'assistant', content: m.content ?? '' }, finish_reason: null }] });
		(m.tool_calls ?? []).forEach((t, i) => {
			const args = typeof t.function?.arguments === 'string' ? t.function.arguments : JSON.stringify(t.function?.arguments ?? {});
			send({
				...base,
				choices: [
					{
						index,
						delta: { tool_calls: [{ index: i, id: t.id ?? `call_${i}`, type: 'function', function: { name: t.function?.name ?? '', arguments: args } }] },
						finish_reason: null
					}
				]
			});
		});
		const finish = choice.finish_reason ?? ((m.tool_calls ?? []).length ? 'tool_calls' : 'stop');
		send({ ...base, choices: [{ index, delta: {}, finish_reason: finish }] });
	}
	if (c.usage) send({ ...base, choices: [], usage: c.usage });
	out.push('data: [DONE]\n\n');
	return out.join('');
}

/**
 * Wraps `inner` (the global fetch by default). `streamWithTools: false` makes every request that
 * offers tools non-streamed; the NO_STREAM_HEADER does it for one request.
 */
export function compatFetch(opts: { streamWithTools?: boolean; inner?: typeof fetch } = {}): typeof fetch {
	const inner = opts.inner ?? fetch;
	return async (input, init) => {
		const headers = new Headers(init?.headers);
		const forceNoStream = headers.has(NO_STREAM_HEADER);
		headers.delete(NO_STREAM_HEADER);
		let body = init?.body;
		let unstreamed = false;
		let offered = new Set<string>();
		if (typeof body === 'string' && requestUrl(input).endsWith('/chat/completions')) {
			try {
				const json = JSON.parse(body) as { stream?: boolean; tools?: unknown[]; stream_options?: unknown };
				offered = offeredTools(json);
				if (json.stream && (forceNoStream || (opts.streamWithTools === false && Array.isArray(json.tools) && json.tools.length))) {
					json.stream = false;
					delete json.stream_options;
					body = JSON.stringify(json);
					unstreamed = true;
				}
			} catch {
				/* not JSON: pass through */
			}
		}
		const res = await inner(input, { ...init, headers, body });
		if (!res.ok || !res.body) return res;
		if (unstreamed) {
			const completion = callsFromText((await res.json()) as Completion, offered);
			return new Response(completionAsSse(completion), { status: 200, headers: { 'content-type': 'text/event-stream' } });
		}
		if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
			if (!offered.size || !(res.headers.get('content-type') ?? '').includes('json')) return res;
			const completion = callsFromText((await res.json()) as Completion, offered);
			return new Response(JSON.stringify(completion), { status: res.status, statusText: res.statusText, headers: { 'content-type': 'application/json' } });
		}
		return new Response(fixSseStream(res.body, offered), { status: res.status, statusText: res.statusText, headers: res.headers });
	};
}

/** A non-streamed answer whose calls came as text, with them as `tool_calls`. */
function callsFromText(c: Completion, offered: ReadonlySet<string>): Completion {
	for (const choice of c.choices ?? []) {
		const m = choice.message;
		if (!m || m.tool_calls?.length || typeof m.content !== 'string') continue;
		const parsed = parseTextToolCalls(m.content, offered);
		if (!parsed) continue;
		m.content = parsed.text || null;
		m.tool_calls = parsed.calls.map((call, i) => ({ id: `call_text_${i}`, type: 'function', function: { name: call.name, arguments: call.arguments } }));
		choice.finish_reason = 'tool_calls';
	}
	return c;
}

function requestUrl(input: string | URL | Request): string {
	return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}
