/**
 * Tool calls that a local server returns as text in `content` instead of `tool_calls` (qwen3 on
 * some Ollama builds writes its chat template's `<tool_call>{"name":…,"arguments":{…}}</tool_call>`,
 * other models a bare `{"name":…,"arguments":…}`). They become real tool calls when every one
 * names a tool the request offered (the SDK then checks the arguments against the tool's schema
 * like any call); anything else stays text.
 */

export type TextToolCall = { name: string; arguments: string };

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

function asCall(value: unknown, offered: ReadonlySet<string>): TextToolCall | null {
	if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
	const v = value as { name?: unknown; arguments?: unknown; parameters?: unknown };
	if (typeof v.name !== 'string' || !offered.has(v.name)) return null;
	const args = v.arguments ?? v.parameters ?? {};
	if (typeof args === 'string') return { name: v.name, arguments: args };
	if (typeof args !== 'object' || args === null || Array.isArray(args)) return null;
	return { name: v.name, arguments: JSON.stringify(args) };
}

function parseJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

/**
 * The calls written in `content`, and the words before them; null when it is not (only) tool
 * calls to offered tools, so the content is shown as the model wrote it.
 */
export function parseTextToolCalls(content: string, offered: ReadonlySet<string>): { text: string; calls: TextToolCall[] } | null {
	if (offered.size === 0) return null;
	const start = content.indexOf(OPEN);
	if (start >= 0) {
		const calls: TextToolCall[] = [];
		let rest = content.slice(start);
		while (rest.startsWith(OPEN)) {
			const end = rest.indexOf(CLOSE);
			// The closing tag may be missing at the very end (the model stopped on it).
			const body = end < 0 ? rest.slice(OPEN.length) : rest.slice(OPEN.length, end);
			const call = asCall(parseJson(body.trim()), offered);
			if (!call) return null;
			calls.push(call);
			rest = end < 0 ? '' : rest.slice(end + CLOSE.length).trimStart();
		}
		return rest === '' ? { text: content.slice(0, start).trimEnd(), calls } : null;
	}
	const trimmed = content.trim();
	if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return null;
	const parsed = parseJson(trimmed);
	const list = Array.isArray(parsed) ? parsed : [parsed];
	const calls = list.map((v) => asCall(v, offered));
	return calls.length && calls.every((c): c is TextToolCall => c !== null) ? { text: '', calls } : null;
}

/**
 * Streamed content, held back while it may still turn out to be tool calls written as text:
 * from a `<tool_call>` tag on, or the whole reply when it starts with `{` or `[`. Everything
 * else passes at once (the end of a delta that could begin the tag waits for the next one).
 */
export class TextToolCallBuffer {
	#held = '';
	#started = false;

	/** The text to send now for this delta. */
	push(piece: string): string {
		if (this.#held.includes(OPEN) || this.#bareJson()) {
			this.#held += piece;
			return '';
		}
		const all = this.#held + piece;
		const tag = all.indexOf(OPEN);
		let keep: number;
		if (tag >= 0) keep = tag;
		else if (!this.#started && /^\s*$|^\s*[{[]/.test(all)) keep = 0;
		else keep = all.length - partialTagLength(all);
		this.#held = all.slice(keep);
		const out = all.slice(0, keep);
		if (out.trim()) this.#started = true;
		return out;
	}

	/** At the end of the reply: the held text, as calls when it parses as such. */
	end(offered: ReadonlySet<string>): { text: string; calls: TextToolCall[] } {
		const held = this.#held;
		this.#held = '';
		if (!held.trim()) return { text: held, calls: [] };
		return parseTextToolCalls(held, offered) ?? { text: held, calls: [] };
	}

	get holding(): boolean {
		return this.#held !== '';
	}

	#bareJson(): boolean {
		return !this.#started && /^\s*[{[]/.test(this.#held);
	}
}

/** How many characters at the end of `text` could begin `<tool_call>`. */
function partialTagLength(text: string): number {
	for (let n = Math.min(OPEN.length - 1, text.length); n > 0; n--) if (OPEN.startsWith(text.slice(-n))) return n;
	return 0;
}
