import type { ToolSet } from 'ai';
import type { ToolContext } from './context';
import { fleetTools } from './fleet';
import { httpGetTool } from './http-get';
import { searchKnowledgeTool } from './search-knowledge';

/** Tools after which the turn ends at once (the operator has to act first). */
export const TURN_ENDING_TOOLS: string[] = [];

/** Every tool the agent has in one turn. */
export function buildTools(ctx: ToolContext): ToolSet {
	return {
		...fleetTools(ctx),
		search_knowledge: searchKnowledgeTool(ctx),
		http_get: httpGetTool(ctx)
	};
}
