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
