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
 */

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

/** Rewrites an SSE body chunk by chunk, passing through anything that is not a JSON data line. */
function fixSseStream(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
	const fixer = new ToolIndexFixer();
	const decoder = new TextDecoder();
	const encoder = new TextEncoder();
	let buffer = '';
	const rewrite = (line: string): string | null => {
		if (!line.startsWith('data:')) return line;
		const data = line.slice(5).trim();
		if (!data || data === '[DONE]') return line;
		try {
			const fixed = fixer.fixOrDrop(JSON.parse(data) as Chunk);
			return fixed ? `data: ${JSON.stringify(fixed)}` : null;
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
		if (typeof body === 'string' && requestUrl(input).endsWith('/chat/completions')) {
			try {
				const json = JSON.parse(body) as { stream?: boolean; tools?: unknown[]; stream_options?: unknown };
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
			const completion = (await res.json()) as Completion;
			return new Response(completionAsSse(completion), { status: 200, headers: { 'content-type': 'text/event-stream' } });
		}
		if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return res;
		return new Response(fixSseStream(res.body), { status: res.status, statusText: res.statusText, headers: res.headers });
	};
}

function requestUrl(input: string | URL | Request): string {
	return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}
