import type { ToolSet } from 'ai';
import type { ToolContext } from './context';

/** Tools after which the turn ends at once (the operator has to act first). */
export const TURN_ENDING_TOOLS: string[] = [];

/** Every tool the agent has in one turn. */
export function buildTools(ctx: ToolContext): ToolSet {
	void ctx;
	return {};
}
