import type { MessageChunk, MessagePart, NomosUIMessage } from '../types/messages';

/**
 * The id of a message's open text part. A writer keeps at most one text part open, always the
 * last part, and closes it (`text-end`) before any other chunk; so one fixed id is enough, and a
 * snapshot can be resumed: its open text part is re-opened under this id (see `foldChunks`).
 */
export const TEXT_ID = 'text';

/**
 * Applies UI message chunks to a message's parts with the AI SDK's own reader
 * (`readUIMessageStream`) and returns the new parts; the input is not changed. Every holder of a
 * message folds the same chunks this way: the writer (what it stores), the server composing a
 * streaming message from its deltas, and the browser. A chunk that does not fit (a delta for a
 * part that is not there) throws.
 */
export async function foldChunks(parts: MessagePart[], chunks: MessageChunk[]): Promise<MessagePart[]> {
	// A retraction is Nomos's own chunk (the SDK has no way to take words back): fold up to it, apply it, go on.
	const at = chunks.findIndex((c) => c.type === 'data-retract');
	if (at >= 0) {
		const before = await foldSdkChunks(parts, chunks.slice(0, at));
		const { from } = (chunks[at] as Extract<MessageChunk, { type: 'data-retract' }>).data;
		return foldChunks(retract(before, from), chunks.slice(at + 1));
	}
	return foldSdkChunks(parts, chunks);
}

/** The parts without the words of the step that starts at `from` (see RetractData). */
function retract(parts: MessagePart[], from: number): MessagePart[] {
	const kept = parts.filter((p, i) => i < from || (p.type !== 'text' && p.type !== 'reasoning'));
	const tail = kept.slice(from);
	if (tail[0]?.type === 'step-start' && !tail.slice(1).some((p) => p.type !== 'step-start' && !p.type.startsWith('data-')))
		return [...kept.slice(0, from), ...tail.slice(1)];
	return kept;
}

async function foldSdkChunks(parts: MessagePart[], chunks: MessageChunk[]): Promise<MessagePart[]> {
	if (chunks.length === 0) return JSON.parse(JSON.stringify(parts)) as MessagePart[];
	// A JSON copy: independent of the caller's objects (or Svelte proxies) and free of `undefined` keys.
	const copy = JSON.parse(JSON.stringify(parts)) as MessagePart[];
	const prefix: MessageChunk[] = [];
	const last = copy[copy.length - 1];
	if (last?.type === 'text' && last.state === 'streaming') {
		copy.pop();
		prefix.push({ type: 'text-start', id: TEXT_ID }, { type: 'text-delta', id: TEXT_ID, delta: last.text });
	}
	// readUIMessageStream folds into the assistant message it is given (state.message), in place;
	// its yields are snapshots taken at some chunks only, so the result is read from `message`.
	const message: NomosUIMessage = { id: 'fold', role: 'assistant', parts: copy };
	const all = [...prefix, ...chunks];
	const stream = new ReadableStream<MessageChunk>({
		start(c) {
			for (const ch of all) c.enqueue(ch);
			c.close();
		}
	});
	let failure: unknown;
	// Imported here, not at the top: a server process loads the SDK when it first folds (see boot's cold start).
	const { readUIMessageStream } = await import('ai');
	const reader = readUIMessageStream<NomosUIMessage>({ message, stream, terminateOnError: true, onError: (e) => (failure ??= e) });
	for await (const snapshot of reader) void snapshot;
	if (failure) throw failure instanceof Error ? failure : new Error(JSON.stringify(failure));
	return JSON.parse(JSON.stringify(message.parts)) as MessagePart[];
}

/** JSON with object keys sorted: equal for equal messages whatever the key order (jsonb reorders keys). */
export function canonicalJson(value: unknown): string {
	return JSON.stringify(value, (_k, v: unknown) =>
		v && typeof v === 'object' && !Array.isArray(v)
			? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
			: v
	);
}
