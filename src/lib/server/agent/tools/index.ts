import type { ToolSet } from 'ai';
import type { ToolContext } from './context';
import { fleetTools } from './fleet';
import { httpGetTool } from './http-get';
import { searchKnowledgeTool } from './search-knowledge';
import { requestExecutionTool } from './request-execution';
import { proposePlanTool } from './propose-plan';
import { getExecutionStatusTool } from './get-execution-status';
import { askOperatorTool } from './ask-operator';

/** Tools after which the turn ends at once (the operator has to act first). */
export const TURN_ENDING_TOOLS: string[] = ['propose_plan', 'ask_operator'];

/** Every tool the agent has in one turn. */
export function buildTools(ctx: ToolContext): ToolSet {
	return {
		...fleetTools(ctx),
		search_knowledge: searchKnowledgeTool(ctx),
		http_get: httpGetTool(ctx),
		request_execution: requestExecutionTool(ctx),
		propose_plan: proposePlanTool(ctx),
		get_execution_status: getExecutionStatusTool(ctx),
		ask_operator: askOperatorTool(ctx)
	};
}
