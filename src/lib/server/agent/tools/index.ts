import type { InferUITools, StopCondition, Tool, ToolSet } from 'ai';
import { largestField, MAX_TOOL_INPUT_BYTES, toolError, type ToolContext } from './context';
import { fleetTools } from './fleet';
import { httpGetTool } from './http-get';
import { searchKnowledgeTool } from './search-knowledge';
import { requestExecutionTool } from './request-execution';
import { describeActionTool } from './describe-action';
import { proposePlanTool } from './propose-plan';
import { getExecutionStatusTool } from './get-execution-status';
import { askOperatorTool } from './ask-operator';
import { markHypothesisTool, presentHypothesesTool } from './hypotheses';
import { lean } from './lean-schema';
import { isReplayAnswer, replayed } from './replay';

/** Tools after which the turn ends at once (the operator has to act first). */
export const TURN_ENDING_TOOLS: string[] = ['propose_plan', 'ask_operator'];

/**
 * Ends the turn after a step in which a plan or question was accepted and now waits for the
 * operator. A refused one (its result is `{ error }`) does not: the model reads the error and
 * fixes it in the same turn, as with every other tool; nor does one a replay answered at once.
 */
export const parkedForOperator: StopCondition<ToolSet> = ({ steps }) =>
	(steps.at(-1)?.toolResults ?? []).some((r) => TURN_ENDING_TOOLS.includes(r.toolName) && !isToolError(r.output) && !isReplayAnswer(r.output));

function isToolError(o: unknown): boolean {
	return !!o && typeof o === 'object' && typeof (o as { error?: unknown }).error === 'string';
}

/** Refuses a call whose arguments are larger than MAX_TOOL_INPUT_BYTES, whatever the tool's own schema allows. */
export function capped(t: Tool): Tool {
	const execute = t.execute;
	if (!execute) return t;
	return {
		...t,
		execute: (input, options) => {
			const bytes = Buffer.byteLength(JSON.stringify(input) ?? '', 'utf8');
			if (bytes > MAX_TOOL_INPUT_BYTES) {
				const big = largestField(input);
				return toolError(
					`the arguments are ${bytes} bytes; a tool call may carry at most ${MAX_TOOL_INPUT_BYTES} (the largest field is ${big.path}, ${big.bytes} characters)`,
					'send smaller arguments'
				);
			}
			return execute(input, options);
		}
	};
}

/** Runs the tool once the inventory read-back of this turn (if any) has settled. */
function afterReadBack(t: Tool, ready: Promise<unknown> | undefined): Tool {
	const execute = t.execute;
	if (!execute || !ready) return t;
	return {
		...t,
		execute: async (input, options) => {
			await ready;
			return execute(input, options);
		}
	};
}

/** Every tool the agent may have, by the name the model sees: the typed registry (see NomosTools). */
function nomosTools(ctx: ToolContext) {
	return {
		...fleetTools(ctx),
		search_knowledge: searchKnowledgeTool(ctx),
		http_get: httpGetTool(ctx),
		request_execution: requestExecutionTool(ctx),
		describe_action: describeActionTool(ctx),
		propose_plan: proposePlanTool(ctx),
		get_execution_status: getExecutionStatusTool(ctx),
		ask_operator: askOperatorTool(ctx),
		present_hypotheses: presentHypothesesTool(ctx),
		mark_hypothesis: markHypothesisTool(ctx)
	};
}

/** The agent's tools by name, with their input and output types. */
export type NomosTools = ReturnType<typeof nomosTools>;

declare module '../../../types/messages' {
	/** The `tool-<name>` parts of a message are typed from the tools themselves (see types/messages.ts). */
	// eslint-disable-next-line @typescript-eslint/no-empty-object-type
	interface NomosToolRegistry extends InferUITools<NomosTools> {}
}

/**
 * Every tool the agent has in one turn: the same list in every request of a session (a model
 * server caches the prompt's prefix, and the tool definitions are near its start).
 */
export function buildTools(ctx: ToolContext): ToolSet {
	const tools: ToolSet = nomosTools(ctx);
	// Alert text is attacker-reachable: an investigation never fetches URLs (read the fleet instead).
	if (ctx.watch) delete tools.http_get;
	const mode = ctx.replay;
	return Object.fromEntries(
		Object.entries(tools).map(([name, t]) => [name, afterReadBack(capped(lean(mode ? replayed(name, t, mode) : t)), ctx.inventoryReady)])
	);
}
