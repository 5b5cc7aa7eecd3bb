import { jsonSchema, tool, type JSONSchema7 } from 'ai';
import { z } from 'zod';
import { ACTIONS, ACTION_NAMES, CLUSTER_ACTIONS, isActionName, needsPerson, type ActionDef, type ActionName } from '../../proxmox/actions';
import { FAMILIES, ON_DEMAND } from '../../proxmox/families';
import { requestCauseOf } from '../../executions/cause';
import { actionSignature } from '../../proxmox/tool-schema';
import { requestExecution } from '../../executions/request';
import { sql } from '../../db/index';
import { blastRadius } from '../../db/queries/blast-radius';
import { blastRadiusSummary } from '../../../blast-radius';
import { actionParams, callKey, toolError, type ToolContext } from './context';
import { beforeApprovalText } from '../../executions/before-approval';

export const requestExecutionInput = z
	.object({
		target: z.string().max(200).describe("where: a host ('strong') for pct_create and host-level actions, or a container ('lxc:strong/101', '101', 'caddy')"),
		action: z
			.string()
			.max(64)
			.describe(`one of: ${ACTION_NAMES.join(', ')}`),
		params: actionParams.describe(
			"the action's parameters, e.g. pct_create: { hostname, template, cores, memory, swap, disk, storage, bridge, ip, unprivileged, features: { nesting }, start }"
		),
		reason: z.string().max(1000).describe('why, in one sentence, for the operator')
	})
	.strict();

export type RequestExecutionInput = z.output<typeof requestExecutionInput>;

/**
 * What the model is shown: four plain fields, params a loose object. The catalogue is in the
 * description, one signature per action (see catalogueLines); the arguments are checked by the
 * strict zod schema above, and params by the action's own schema in prepareExecution, whose
 * error names the wrong field and lists the action's fields. describe_action gives one action's
 * full JSON Schema on demand. (Every action's typed schema inline took about 2,500 tokens of
 * every request; a local model at a 4,096-token window had no room left to talk.)
 */
export function requestExecutionJsonSchema(): JSONSchema7 {
	return {
		type: 'object',
		properties: {
			// What a target is: the description's last line says it for every action (tokens: issue #45).
			target: { type: 'string' },
			action: { type: 'string' },
			params: { type: 'object' },
			reason: { type: 'string', description: 'why, in one sentence, for the operator' }
		},
		required: ['target', 'action', 'params', 'reason']
	};
}

const inputSchema = jsonSchema<RequestExecutionInput>(requestExecutionJsonSchema(), {
	validate: (value) => {
		const r = requestExecutionInput.safeParse(value);
		return r.success ? { success: true, value: r.data } : { success: false, error: r.error };
	}
});

// Grouped by the one definition of what needs a person (needsPerson: destructive or irreversible).
const GROUPS: Array<[string, (n: ActionName) => boolean]> = [
	['Read-only, run at once', (n) => ACTIONS[n].classification === 'read_only'],
	['Changes, wait for approval', (n) => ACTIONS[n].classification !== 'read_only' && !needsPerson(n)],
	['Destructive, a person approves', (n) => needsPerson(n)]
];

/**
 * The catalogue in a few lines: signatures grouped by what approving them means, and which run on
 * a host. The migrate actions only when a host is a cluster member (tokens: they cannot apply).
 */
export function catalogueLines(opts: { cluster?: boolean } = {}): string {
	// A family described on demand (describe_action "health") is named, not listed (issue #45: the first request's budget).
	const listed = ACTION_NAMES.filter((n) => !ON_DEMAND.includes(n));
	const names = listed.filter((n) => opts.cluster || !CLUSTER_ACTIONS.includes(n));
	const lines = GROUPS.map(
		([label, has]) =>
			`${label}: ${names
				.filter((n) => has(n))
				.map(catalogueSignature)
				.join(', ')}.`
	);
	// Every VM action runs on the host: one phrase for them instead of 17 names (tokens: issue #30's budget).
	const on = (scope: string) => listed.filter((n) => ACTIONS[n].scope === scope && !isVmAction(n)).join(', ');
	lines.push(
		`Target a host for ${on('host')} and every qm_/vm_ action (each takes the VM's vmid too); a host or a container for ${on('host-or-ct')}; a container for the rest.`
	);
	return lines.join('\n');
}

const isVmAction = (n: string) => /^(qm|vm)_/.test(n);

/**
 * An action's signature in the catalogue: without defaults (describe_action gives them), and a VM
 * action's leading required vmid left out, as the Target line says it once for all of them
 * (15 times `vmid, ` cost ~30 tokens of every first request: issue #45).
 */
export function catalogueSignature(n: ActionName): string {
	const s = actionSignature(n, { defaults: false });
	return isVmAction(n) ? s.replace(/^(\w+)\(vmid(?:, |(?=\)))/, '$1(') : s;
}

// How a turn goes on after a request is the instructions' to say (an MCP client is not re-invoked at all).
const DESCRIPTION = (cluster: boolean) =>
	'Run one catalogued action, params in parentheses (? optional); ' +
	`describe_action explains one action or the family ${FAMILIES.map((f) => `${f.name} (${f.gist})`).join(' or ')}.\n` +
	catalogueLines({ cluster });

/** request_execution: ask to run one catalogued action; mutations wait for approval. */
export function requestExecutionTool(ctx: ToolContext) {
	return tool({
		description: DESCRIPTION(ctx.cluster === true),
		inputSchema,
		execute: async (input, { toolCallId }) => {
			// An investigation (an alert's or a schedule's chat, no operator watching) fixes through
			// plans: what needs a person is never asked for one-off there.
			if (ctx.watch && !ctx.mcp && isActionName(input.action) && needsPerson(input.action)) {
				return toolError(
					`${input.action} cannot be undone: in ${ctx.watch.kind === 'alert' ? 'an alert investigation' : 'a scheduled run'} it is not requested on its own`,
					'propose a plan instead (propose_plan): the operator reviews the whole fix, with what you found, before anything runs'
				);
			}
			const requester = ctx.mcp
				? {
						operator: ctx.mcp.operator,
						route: 'mcp',
						tokenId: ctx.mcp.token.id,
						detail: { token: ctx.mcp.token },
						note: `${ctx.mcp.operator.username}'s MCP client (token “${ctx.mcp.token.name}”)`
					}
				: undefined;
			const r = await requestExecution(ctx.sessionId, input, { requester, callKey: callKey(ctx, toolCallId), cause: requestCauseOf(ctx) });
			if ('error' in r) return toolError(r.error, r.hint);
			const e = r.execution;
			const base = { executionId: e.id, action: e.action, target: e.target, classification: e.classification, command: e.commandPreview };
			if (r.via === 'read_only') {
				// A read with a digest answers in its few lines; one that failed is unknown, never "none".
				if ((ACTIONS[e.action as ActionName] as ActionDef | undefined)?.digest) {
					const output = e.status === 'succeeded' ? (e.result ?? '') : `unknown: ${e.error ?? 'the read did not finish'}`;
					return { ...base, status: e.status, output, ...(e.error ? { error: e.error } : {}) };
				}
				const out = e.steps.map((s) => s.stdoutTail || s.stderrTail).join('\n');
				return { ...base, status: e.status, output: out.slice(-6000), ...(e.error ? { error: e.error } : {}) };
			}
			// The agent is re-invoked by results; an MCP client reads them itself.
			const after = ctx.mcp ? 'read its status and result with get_execution' : 'you will be re-invoked with its result';
			// Approved already: the command is on the operator's card; the model needs the id and what comes next.
			const { command: _c, ...approved } = base;
			if (r.via === 'rule') return { ...approved, status: 'queued', message: `approved by rule "${r.rule}", running; ${after}` };
			// An error the model acts on in this turn: the card stays (the operator sees what was asked), but it can never be approved.
			if (r.via === 'cannot_run' && e.beforeApproval) {
				return {
					...base,
					status: 'cannot_run',
					error: `${beforeApprovalText(e.beforeApproval)}. Execution ${e.id} was recorded but cannot be approved, and nothing will run.`,
					hint: 'tell the operator why, and propose something that can run (or ask what they want); do not request the same thing again'
				};
			}
			const unchecked =
				e.beforeApproval?.outcome === 'unknown'
					? { beforeApproval: `${beforeApprovalText(e.beforeApproval)}; it is checked again right before it runs` }
					: e.beforeApproval?.outcome === 'note'
						? { beforeApproval: beforeApprovalText(e.beforeApproval) }
						: {};
			// Counts and states only: note titles and CT descriptions are not the model's to read here.
			const radius = await blastRadius(sql(), e.id).catch(() => null);
			return {
				...base,
				status: 'awaiting_approval',
				message: ctx.mcp
					? `execution ${e.id} awaiting approval by an operator (Ops page); read its status with get_execution`
					: `execution ${e.id} awaiting approval; you will be re-invoked when it finishes or is denied`,
				...unchecked,
				...(radius
					? { blastRadius: `${e.target}: ${blastRadiusSummary(radius)} (the operator sees the details on the card; mention anything that looks risky)` }
					: {})
			};
		}
	});
}
