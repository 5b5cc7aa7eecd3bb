import { jsonSchema, tool, type JSONSchema7 } from 'ai';
import { z } from 'zod';
import { ACTION_NAMES, catalogueSummary, paramFields } from '../../proxmox/actions';
import { actionParamsVariants } from '../../proxmox/tool-schema';
import { requestExecution } from '../../executions/request';
import { sql } from '../../db/index';
import { blastRadius } from '../../db/queries/blast-radius';
import { blastRadiusSummary } from '../../../blast-radius';
import { actionParams, callKey, toolError, type ToolContext } from './context';

export const requestExecutionInput = z
	.object({
		target: z.string().max(200).describe("where: a host ('strong') for pct_create and host-level actions, or a container ('lxc:strong/101', '101', 'caddy')"),
		action: z.string().max(64).describe(`one of: ${ACTION_NAMES.join(', ')}`),
		params: actionParams.describe('the action\'s parameters, e.g. pct_create: { hostname, template, cores, memory, swap, disk, storage, bridge, ip, unprivileged, features: { nesting }, start }'),
		reason: z.string().max(1000).describe('why, in one sentence, for the operator')
	})
	.strict();

export type RequestExecutionInput = z.output<typeof requestExecutionInput>;

let cachedSchema: JSONSchema7 | undefined;

/**
 * What the model is shown: target, action (an enum), reason, and params as a union of every
 * action's typed params (each variant titled with its action), generated from the catalogue.
 */
export function requestExecutionJsonSchema(): JSONSchema7 {
	const shape = requestExecutionInput.shape;
	cachedSchema ??= {
		type: 'object',
		properties: {
			target: { type: 'string', maxLength: 200, description: shape.target.description },
			action: { type: 'string', enum: [...ACTION_NAMES], description: 'the catalogued action; params must be the variant titled with this action' },
			params: { description: "the action's parameters: exactly the fields of the variant whose title is the action", anyOf: actionParamsVariants() },
			reason: { type: 'string', maxLength: 1000, description: shape.reason.description }
		},
		required: ['target', 'action', 'params', 'reason'],
		additionalProperties: false
	};
	return cachedSchema;
}

/**
 * The tool's input schema: the typed union above for the model, while arguments are checked by
 * the loose zod schema, so a wrong field reaches prepareExecution, whose error names the field
 * and lists the action's fields (a union validator would only say "no variant matched").
 */
const inputSchema = jsonSchema<RequestExecutionInput>(() => requestExecutionJsonSchema(), {
	validate: (value) => {
		const r = requestExecutionInput.safeParse(value);
		return r.success ? { success: true, value: r.data } : { success: false, error: r.error };
	}
});

/**
 * Below this context window (tokens) the typed schema (about 2,500 tokens) would crowd out the
 * conversation (Ollama runs at 4096 by default): the fields are then listed in the description.
 */
export const TYPED_SCHEMA_MIN_CONTEXT = 8192;

const INTRO =
	'Request one execution from the catalogue. Read-only actions run at once and return their output; ' +
	'mutations return "awaiting approval" (or run at once when an always-allow rule listed in your instructions matches). ' +
	'You are re-invoked automatically when a mutation finishes. ';

/** request_execution: ask to run one catalogued action; mutations wait for approval. */
export function requestExecutionTool(ctx: ToolContext) {
	const typed = !(ctx.contextTokens && ctx.contextTokens < TYPED_SCHEMA_MIN_CONTEXT);
	return tool({
		description: typed
			? `${INTRO}params: exactly the fields of the params variant titled with the action (each variant says what its action does).`
			: `${INTRO}Catalogue: ${catalogueSummary()}. Fields of params per action: ${ACTION_NAMES.map((n) => `${n}: ${paramFields(n)}`).join('; ')}`,
		inputSchema: typed ? inputSchema : requestExecutionInput,
		execute: async (input, { toolCallId }) => {
			const requester = ctx.mcp
				? { operator: ctx.mcp.operator, route: 'mcp', tokenId: ctx.mcp.token.id, detail: { token: ctx.mcp.token }, note: `${ctx.mcp.operator.username}'s MCP client (token “${ctx.mcp.token.name}”)` }
				: undefined;
			const r = await requestExecution(ctx.sessionId, input, { requester, callKey: callKey(ctx, toolCallId) });
			if ('error' in r) return toolError(r.error, r.hint);
			const e = r.execution;
			const base = { executionId: e.id, action: e.action, target: e.target, classification: e.classification, command: e.commandPreview };
			if (r.via === 'read_only') {
				const out = e.steps.map((s) => s.stdoutTail || s.stderrTail).join('\n');
				return { ...base, status: e.status, output: out.slice(-6000), ...(e.error ? { error: e.error } : {}) };
			}
			// The agent is re-invoked by results; an MCP client reads them itself.
			const after = ctx.mcp ? 'read its status and result with get_execution' : 'you will be re-invoked with its result';
			if (r.via === 'rule') return { ...base, status: 'queued', message: `execution ${e.id} approved by rule "${r.rule}", running; ${after}` };
			// Counts and states only: note titles and CT descriptions are not the model's to read here.
			const radius = await blastRadius(sql(), e.id).catch(() => null);
			return {
				...base,
				status: 'awaiting_approval',
				message: ctx.mcp
					? `execution ${e.id} awaiting approval by an operator (Ops page); read its status with get_execution`
					: `execution ${e.id} awaiting approval; you will be re-invoked when it finishes or is denied`,
				...(radius ? { blastRadius: `${e.target}: ${blastRadiusSummary(radius)} (the operator sees the details on the card; mention anything that looks risky)` } : {})
			};
		}
	});
}
