// What a local server's prefix cache saves (issue #46): llama.cpp, Ollama and vLLM keep the KV cache of
// the previous request and re-process only what follows the longest token prefix the next request
// shares with it (llama.cpp keeps one per slot: a summary request between two turns would evict it;
// it is left out here, as a server with a second slot or vLLM's shared cache would). Each request is rendered as a chat template does (the system message, the tool
// definitions, then each message with its role marker) and compared token by token (o200k).
import { encodeTokens, type PromptBody } from '../src/lib/server/agent/prompt-tokens';
import { SUMMARY_SYSTEM } from '../src/lib/server/agent/summary';

type Message = NonNullable<PromptBody['messages']>[number];

/** Prompt tokens per second of a 7B model on a CPU, and of a GPU. */
export const SPEEDS = [50, 1000] as const;
/** The goal: per request, tokens to process at most this many times the tokens new since the previous request. */
export const PREFIX_GOAL = 1.15;

export type PrefixCost = {
	/** Tokens of the whole request. */
	total: number;
	/** Tokens of the longest prefix shared with the previous request of the session. */
	shared: number;
	/** Tokens the server processes with a prefix cache: total − shared. */
	process: number;
	/** Tokens new since the previous request: what the request grew by (all of the first request). */
	fresh: number;
	/** A summary request came between this request and the previous one: the history was folded. */
	afterFold: boolean;
};

const content = (m: Message) => (typeof m.content === 'string' ? m.content : m.content == null ? '' : JSON.stringify(m.content));

function renderMessage(m: Message): string {
	const calls = m.tool_calls ? `\n${JSON.stringify(m.tool_calls)}` : '';
	const id = m.tool_call_id ? ` ${m.tool_call_id}` : '';
	return `<start>${m.role}${id}\n${content(m)}${calls}<end>\n`;
}

/** A request as a chat template lays it out: the system messages, the tool definitions, then each other message. */
function render(body: PromptBody): string {
	const all = body.messages ?? [];
	const system = all
		.filter((m) => m.role === 'system')
		.map(renderMessage)
		.join('');
	const tools = body.tools?.length ? `<tools>\n${JSON.stringify(body.tools)}\n` : '';
	return (
		system +
		tools +
		all
			.filter((m) => m.role !== 'system')
			.map(renderMessage)
			.join('')
	);
}

function sharedPrefix(a: number[], b: number[]): number {
	const n = Math.min(a.length, b.length);
	let i = 0;
	while (i < n && a[i] === b[i]) i++;
	return i;
}

const isSummary = (body: PromptBody) => content(body.messages?.[0] ?? { role: 'system' }).startsWith(SUMMARY_SYSTEM.slice(0, 40));

/**
 * The prefix-cache cost of each turn request of one session, in order: `bodies` as the model
 * received them, summary requests included (they are left out of the result and mark the
 * request after them as after a fold). The first request shares nothing.
 */
export function prefixCosts(bodies: PromptBody[]): PrefixCost[] {
	const out: PrefixCost[] = [];
	let prev: number[] | null = null;
	let folded = false;
	for (const body of bodies) {
		if (isSummary(body)) {
			folded = true;
			continue;
		}
		const tokens = encodeTokens(render(body));
		const shared = prev ? sharedPrefix(prev, tokens) : 0;
		const fresh = prev ? Math.max(0, tokens.length - prev.length) : tokens.length;
		out.push({ total: tokens.length, shared, process: tokens.length - shared, fresh, afterFold: folded });
		prev = tokens;
		folded = false;
	}
	return out;
}

/** process ÷ fresh (a request that did not grow counts as growing by one token). */
export const prefixRatio = (c: PrefixCost) => c.process / Math.max(1, c.fresh);

export const secondsAt = (tokens: number, perSecond: number) => tokens / perSecond;
