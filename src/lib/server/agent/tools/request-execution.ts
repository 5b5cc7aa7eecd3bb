import { tool } from 'ai';
import { z } from 'zod';
import { ACTION_NAMES, catalogueSummary } from '../../proxmox/actions';
import { requestExecution } from '../../executions/request';
import { actionParams, toolError, type ToolContext } from './context';

export const requestExecutionInput = z
	.object({
		target: z.string().max(200).describe("where: a host ('strong') for pct_create and host-level actions, or a container ('lxc:strong/101', '101', 'caddy')"),
		action: z.string().max(64).describe(`one of: ${ACTION_NAMES.join(', ')}`),
		params: actionParams.describe('the action\'s parameters, e.g. pct_create: { hostname, template, cores, memory, swap, disk, storage, bridge, ip, unprivileged, features: { nesting }, start }'),
		reason: z.string().max(1000).describe('why, in one sentence, for the operator')
	})
	.strict();

/** request_execution: ask to run one catalogued action; mutations wait for approval. */
export function requestExecutionTool(ctx: ToolContext) {
	return tool({
		description:
			'Request one execution from the catalogue. Read-only actions run at once and return their output; ' +
			'mutations return "awaiting approval" (or run at once when they are a step of a plan the operator approved, or an always-allow rule listed in your instructions matches). ' +
			'You are re-invoked automatically when a mutation finishes. Catalogue: ' +
			catalogueSummary(),
		inputSchema: requestExecutionInput,
		execute: async (input) => {
			const r = await requestExecution(ctx.sessionId, input);
			if ('error' in r) return toolError(r.error, r.hint);
			const e = r.execution;
			const base = { executionId: e.id, action: e.action, target: e.target, classification: e.classification, command: e.commandPreview };
			if (r.via === 'read_only') {
				const out = e.steps.map((s) => s.stdoutTail || s.stderrTail).join('\n');
				return { ...base, status: e.status, output: out.slice(-6000), ...(e.error ? { error: e.error } : {}) };
			}
			if (r.via === 'plan') return { ...base, status: 'queued', message: `execution ${e.id} queued (approved as a step of the plan); you will be re-invoked with its result` };
			if (r.via === 'rule') return { ...base, status: 'queued', message: `execution ${e.id} approved by rule "${r.rule}", running; you will be re-invoked with its result` };
			return { ...base, status: 'awaiting_approval', message: `execution ${e.id} awaiting approval; you will be re-invoked when it finishes or is denied` };
		}
	});
}
