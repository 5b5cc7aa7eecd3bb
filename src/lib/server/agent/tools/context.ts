import { z } from 'zod';

/** What every tool factory gets for one turn. */
export interface ToolContext {
	sessionId: string;
	/** The assistant message this turn writes into. */
	messageId: string;
	/** Aborted when the operator stops the turn. */
	signal: AbortSignal;
	/** Per-turn counters, e.g. the http_get budget. */
	turn: { httpGets: number };
}

/** A problem the model can fix (bad argument, unknown id): returned as the tool result, not thrown. */
export type ToolError = { error: string; hint?: string };

export function toolError(error: string, hint?: string): ToolError {
	return hint ? { error, hint } : { error };
}

/** The largest arguments one tool call may carry (UTF-8 bytes of their JSON). */
export const MAX_TOOL_INPUT_BYTES = 16 * 1024;
/** An action's params: a small object (no field alone may carry kilobytes). */
export const boundedParams = z
	.record(z.string().max(64), z.unknown())
	.default({})
	.refine((p) => Buffer.byteLength(JSON.stringify(p), 'utf8') <= 4096, 'params are larger than 4 KB');

/**
 * What is stored (and replayed) of a tool call's input or error: as it is when small, else a
 * marker with the original size and a short preview, so one hostile call cannot bloat every
 * later request of the session.
 */
export function boundedForStorage(input: unknown, maxBytes = MAX_TOOL_INPUT_BYTES): unknown {
	if (input === undefined) return undefined;
	const json = typeof input === 'string' ? input : JSON.stringify(input);
	const bytes = Buffer.byteLength(json ?? '', 'utf8');
	if (bytes <= maxBytes) return input;
	return { truncated: true, originalBytes: bytes, preview: json.slice(0, 1024) };
}

/** An error text cut to a readable length (a validation error may quote the whole input). */
export function boundedText(text: string, max = 2000): string {
	return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more characters]`;
}
