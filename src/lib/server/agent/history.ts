import { convertToModelMessages, type JSONValue, type ModelMessage, type ToolModelMessage } from 'ai';
import type { MessageRow } from '../db/queries/messages';
import type { MessagePart, NomosUIMessage } from '../../types/messages';
import { callInput, isNotePart, isRunning, isToolPart, textOf } from '../../messages/parts';

/** How a stored system note is shown to the model (some local servers reject mid-conversation system messages). */
export function noteForModel(text: string): ModelMessage {
	return { role: 'user', content: `[system note — not from the operator] ${text}` };
}

/**
 * The parts as the model may see them: a call that never finished (a cut stream, a crash) is
 * replayed as failed, so every call has its result; a call without input gets `{}`; empty texts go.
 */
function replayable(parts: MessagePart[]): MessagePart[] {
	return parts.flatMap((p): MessagePart[] => {
		if (p.type === 'text') return p.text ? [p] : [];
		if (!isToolPart(p)) return [p];
		// Stored parts are as the stream left them, not as the tool's types would have them: hence the casts.
		if (isRunning(p)) return [{ ...p, state: 'output-error', input: p.input ?? {}, errorText: 'interrupted before it finished' } as MessagePart];
		if (p.state === 'output-error') return [{ ...p, input: callInput(p) ?? {} } as MessagePart];
		return [p];
	});
}

/**
 * Replays one stored assistant message as model messages with the SDK's own conversion: each
 * step (text and tool calls) becomes an assistant message followed by a tool message with those
 * calls' results, as it was live. Notes are the operator's, not the model's: left out (a budget
 * stop is told to the model by toModelMessages). Usage parts are data parts: left out too.
 */
export async function assistantMessages(parts: MessagePart[]): Promise<ModelMessage[]> {
	const message: NomosUIMessage = { id: 'replay', role: 'assistant', parts: replayable(parts) };
	return convertToModelMessages([message]);
}

/** A tool result longer than this (characters of JSON), from before the latest reply, is shown as a handle. */
export const HANDLE_CHARS = 400;
/** Fields of a result that stay beside its handle: they say what it was and how to read it again. */
const HANDLE_KEEPS = ['executionId', 'id', 'ref', 'action', 'target', 'status', 'error'] as const;
/** Tools that only read: calling one again reads the same thing (live). The others act, and are never suggested again. */
const READERS = new Set([
	'get_state_snapshot',
	'list_lxcs',
	'list_entities',
	'get_entity',
	'get_lxc_state',
	'search_knowledge',
	'http_get',
	'get_execution_status',
	'describe_action'
]);

/**
 * What the model sees instead of a long result of an earlier turn: what it was, its size, and
 * the call that reads it again (get_execution_status for an execution, else the same tool, which
 * reads live data). The stored transcript, and what the operator sees, keep the whole result.
 */
export function resultHandle(toolName: string, value: unknown, input: unknown): Record<string, unknown> {
	const size = (JSON.stringify(value) ?? '').length;
	const v = value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
	const kept = Object.fromEntries(HANDLE_KEEPS.flatMap((k) => (typeof v[k] === 'string' && v[k].length <= 200 ? [[k, v[k]]] : [])));
	const executionId = typeof v.executionId === 'string' ? v.executionId : undefined;
	const again = executionId
		? `get_execution_status({"id":"${executionId}"})`
		: READERS.has(toolName)
			? `${toolName}(${JSON.stringify(input ?? {})})`.slice(0, 300)
			: null;
	return { ...kept, shortened: `${size} characters, left out of the history${again ? `; read it again with ${again} if you need it` : ''}` };
}

function withHandles(m: ModelMessage, inputs: Map<string, unknown>): ModelMessage {
	if (m.role !== 'tool') return m;
	return {
		...m,
		content: m.content.map((part): ToolModelMessage['content'][number] => {
			if (part.type !== 'tool-result' || (part.output.type !== 'json' && part.output.type !== 'text')) return part;
			if ((JSON.stringify(part.output.value) ?? '').length <= HANDLE_CHARS) return part;
			return { ...part, output: { type: 'json' as const, value: resultHandle(part.toolName, part.output.value, inputs.get(part.toolCallId)) as JSONValue } };
		})
	};
}

/** The calls' inputs by id, for the handles' "read it again" call. */
function callInputs(messages: ModelMessage[]): Map<string, unknown> {
	const out = new Map<string, unknown>();
	for (const m of messages)
		if (m.role === 'assistant' && Array.isArray(m.content)) for (const p of m.content) if (p.type === 'tool-call') out.set(p.toolCallId, p.input);
	return out;
}

/**
 * The stored transcript as the model sees it. With `handles`, long tool results of every reply
 * but the latest are handles (resultHandle): the model saw them whole when they came, and can
 * read them again. Without, every reply is replayed as it was sent, so each request starts with
 * the one before it (a model server's prefix cache holds); the turn runner does that whenever
 * older turns fold into a summary instead (summary.ts: the prefix then changes at folds only).
 */
export async function toModelMessages(rows: MessageRow[], opts: { handles: boolean } = { handles: true }): Promise<ModelMessage[]> {
	return (await toModelMessagesByRow(rows, opts)).flat();
}

/** toModelMessages, kept apart per stored message (what each one costs; where a fold may cut). */
export async function toModelMessagesByRow(rows: MessageRow[], opts: { handles: boolean } = { handles: true }): Promise<ModelMessage[][]> {
	const out: ModelMessage[][] = [];
	let latest = -1;
	rows.forEach((m, i) => {
		if (m.role === 'assistant' && opts.handles) latest = i;
	});
	for (const [i, m] of rows.entries()) {
		const own: ModelMessage[] = [];
		out.push(own);
		if (m.role === 'user') {
			const text = textOf(m.parts);
			if (text) own.push({ role: 'user', content: text });
		} else if (m.role === 'system') {
			for (const p of m.parts) if (isNotePart(p)) own.push(noteForModel(p.data.model ?? p.data.text));
		} else {
			const replayed = await assistantMessages(m.parts);
			if (i >= latest) own.push(...replayed);
			else {
				const inputs = callInputs(replayed);
				own.push(...replayed.map((x) => withHandles(x, inputs)));
			}
			// A turn stopped by its token budget: the agent is told why it did not go on.
			for (const p of m.parts) if (isNotePart(p) && p.data.kind === 'budget') own.push(noteForModel(p.data.text));
		}
	}
	return out;
}

const size = (m: ModelMessage) => JSON.stringify(m).length;
const SHORTENED = 'older tool output shortened to fit the history budget';

/** A tool result cut to a short preview (the call itself stays, so the model knows it happened). */
function shortenToolMessage(m: ToolModelMessage): ToolModelMessage {
	return {
		...m,
		content: m.content.map((part) => {
			if (part.type !== 'tool-result') return part;
			const text = JSON.stringify('value' in part.output ? part.output.value : '') ?? '';
			if (text.length <= 400) return part;
			return { ...part, output: { type: 'json' as const, value: { note: SHORTENED, preview: text.slice(0, 300) } } };
		})
	};
}

/**
 * Keeps the replayed history under `budget` characters: first the oldest tool outputs are
 * shortened to previews, then the oldest exchanges are left out (a note says so), never the
 * latest operator message or anything after it. An assistant message and the tool results that
 * answer it go together, so the model never sees a call without its result.
 */
export function fitHistory(messages: ModelMessage[], budget: number): ModelMessage[] {
	let total = messages.reduce((n, m) => n + size(m), 0);
	if (total <= budget) return messages;
	const out = [...messages];
	let lastUser = -1;
	out.forEach((m, i) => {
		if (m.role === 'user') lastUser = i;
	});
	const protectedFrom = lastUser >= 0 ? lastUser : out.length;
	for (let i = 0; i < protectedFrom && total > budget; i++) {
		const m = out[i];
		if (m.role !== 'tool') continue;
		const short = shortenToolMessage(m);
		total += size(short) - size(m);
		out[i] = short;
	}
	if (total <= budget) return out;
	// Drop whole exchanges from the front: a message plus the tool results that follow it.
	let cut = 0;
	while (cut < protectedFrom && total > budget) {
		let end = cut + 1;
		while (end < protectedFrom && out[end].role === 'tool') end++;
		for (let i = cut; i < end; i++) total -= size(out[i]);
		cut = end;
	}
	return [noteForModel(`${cut} earlier messages of this conversation were left out to fit the history budget.`), ...out.slice(cut)];
}
