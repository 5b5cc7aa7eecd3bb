import type { Watch } from '../../db/queries/watches';
import type { MessagePart } from '../../../types/messages';
import type { OutsideRead, RequestCause } from '../../../types/executions';
import { z } from 'zod';

/** What every tool factory gets for one turn. */
export interface ToolContext {
	sessionId: string;
	/** The assistant message this turn writes into. */
	messageId: string;
	/** Aborted when the operator stops the turn. */
	signal: AbortSignal;
	/** This turn's counters, and the outside text (http_get pages) it has read so far. */
	turn: { httpGets: number; read?: OutsideRead[] };
	/**
	 * Who caused this turn (executions/cause.ts turnCause), with the outside text its history holds:
	 * recorded on every execution and plan the turn asks for.
	 */
	cause?: RequestCause | null;
	/**
	 * Settles when the containers this turn's finished executions touched have been read back
	 * from their hosts. A continuation starts talking at once; every tool call waits for it, so
	 * no tool answers from the inventory as it was before the change.
	 */
	inventoryReady?: Promise<unknown>;
	/** The model's context window in tokens when known: tool schemas are sized to it. */
	contextTokens?: number | null;
	/**
	 * Set when the tools serve an MCP client instead of the agent (mcp/server.ts): who asked, with
	 * which token. Requests are audited with route `mcp`, and answers say to poll, not to wait.
	 */
	mcp?: McpCaller;
	/** Some configured host is a cluster member: the migrate actions are described to the model. */
	cluster?: boolean;
	/** This turn's reply as folded so far (its earlier steps' calls and results), when a turn runs the tools. */
	replyParts?: () => Promise<MessagePart[]>;
	/** Set in a chat an alert (watches/intake.ts) or a schedule (schedules/tick.ts) opened: which one. */
	watch?: Watch | null;
	/** Set in a replay (replay/run.ts): every tool answers through it instead of running (see tools/replay.ts). */
	replay?: ReplayMode;
}

/**
 * How a replay answers a tool call: from the original session's recorded result or outcome; nothing
 * is run, except a read the original never made when the operator allowed that (`live`).
 */
export interface ReplayMode {
	answer(tool: string, input: unknown, live: () => Promise<unknown>): Promise<unknown>;
}

/** The operator and API token behind an MCP call. */
export type McpCaller = { operator: { id: string; username: string }; token: { id: string; name: string } };

/**
 * The key a tool stores with what it parks for the operator (a request, a plan, a question):
 * the reply and the call that made it. A resumed reply finds them by it (see parked.ts).
 */
export function callKey(ctx: Pick<ToolContext, 'messageId'>, toolCallId: string): string {
	return `${ctx.messageId}/${toolCallId}`;
}

/** A problem the model can fix (bad argument, unknown id): returned as the tool result, not thrown. */
export type ToolError = { error: string; hint?: string };

export function toolError(error: string, hint?: string): ToolError {
	return hint ? { error, hint } : { error };
}

/**
 * The largest arguments one tool call may carry (UTF-8 bytes of their JSON). Room for the
 * largest legitimate call (a pct_exec command may be 32 KB once quoted), nothing more.
 */
export const MAX_TOOL_INPUT_BYTES = 40 * 1024;
/**
 * An action's params. Each action's own schema checks every field (strict, with caps) and says
 * which one is wrong; the whole call is kept within MAX_TOOL_INPUT_BYTES by the tool wrapper.
 */
export const actionParams = z.record(z.string(), z.unknown()).default({});

/** The path of the largest string (or key) inside a value, e.g. `params.argv.1`, for size errors. */
export function largestField(value: unknown, path = ''): { path: string; bytes: number } {
	let best = { path: path || '(arguments)', bytes: typeof value === 'string' ? value.length : 0 };
	if (value && typeof value === 'object') {
		for (const [k, v] of Object.entries(value)) {
			const here = path ? `${path}.${k}` : k;
			const keyed = k.length > best.bytes ? { path: `${here} (the key)`, bytes: k.length } : best;
			const inner = largestField(v, here);
			best = [best, keyed, inner].reduce((a, b) => (b.bytes > a.bytes ? b : a));
		}
	}
	return best;
}

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
