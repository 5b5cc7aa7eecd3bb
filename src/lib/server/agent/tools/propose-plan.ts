import type { TransactionSql } from 'postgres';
import { tool } from 'ai';
import { z } from 'zod';
import { sql } from '../../db/index';
import { insertPlan } from '../../db/queries/plans';
import { prepareExecution, type PreparedExecution } from '../../executions/prepare';
import { planNotice, queueNotice, type PlanCause } from '../../notify/notices';
import { alertOfSession } from '../../db/queries/watches';
import { requestCauseOf } from '../../executions/cause';
import { actionParams, callKey, toolError, type ToolContext } from './context';
import { beforeApprovalText, checkPlanBeforeApproval } from '../../executions/before-approval';

export const proposePlanInput = z
	.object({
		title: z.string().min(3).max(200),
		steps: z
			.array(
				z
					.object({
						action: z.string().max(64).describe('a catalogued action (a read-only one is a check: no approval)'),
						target: z.string().max(200),
						params: actionParams,
						why: z.string().max(500).default('')
					})
					.strict()
			)
			.min(1)
			.max(20)
	})
	.strict();

/** propose_plan: lay out a multi-step change; approving it approves exactly these steps and runs them (executions/plans.ts). */
export function proposePlanTool(ctx: ToolContext) {
	return tool({
		description:
			'Several executions the operator approves at once, each checked now (on an error, fix the plan and call again). ' +
			'Once approved they run in order by themselves, read-only checks included, until one fails; you are re-invoked once, at the end. Ends your turn.',
		inputSchema: proposePlanInput,
		execute: async (input, { toolCallId }) => {
			const prepared: Array<PreparedExecution & { why: string }> = [];
			for (const [i, s] of input.steps.entries()) {
				const p = await prepareExecution({ target: s.target, action: s.action, params: s.params, reason: s.why });
				if ('error' in p) return toolError(`step ${i + 1}: ${p.error}`, p.hint);
				prepared.push({ ...p, why: s.why });
			}
			// What the host can say now: a step it says cannot run refuses the plan here, as a wrong field does.
			const checked = await checkPlanBeforeApproval(prepared);
			const cannot = checked.findIndex((b) => b?.outcome === 'cannot_run');
			if (cannot >= 0) {
				return toolError(
					`step ${cannot + 1}: ${beforeApprovalText(checked[cannot]!)}; the plan was not proposed`,
					'change the plan so that every step can run (e.g. stop a guest in an earlier step before destroying it), or tell the operator why it cannot be done'
				);
			}
			const plan = await sql().begin(async (tx) => {
				const plan = await insertPlan(
					tx,
					ctx.sessionId,
					input.title,
					prepared.map((p, i) => ({ ...p, beforeApproval: checked[i] })),
					callKey(ctx, toolCallId),
					requestCauseOf(ctx)
				);
				await queueNotice(tx, planNotice(plan, await planCauseOf(tx, ctx)));
				return plan;
			});
			return {
				planId: plan.id,
				status: 'awaiting_approval',
				steps: plan.steps.map((s) => ({
					step: s.index + 1,
					action: s.action,
					target: s.target,
					params: s.params,
					command: s.commandPreview,
					...(s.beforeApproval
						? {
								beforeApproval:
									s.beforeApproval.outcome === 'note'
										? beforeApprovalText(s.beforeApproval)
										: `${beforeApprovalText(s.beforeApproval)}; checked again when the plan reaches it`
							}
						: {})
				})),
				message: 'The plan waits for the operator. End your turn now; if approved it runs by itself and you are re-invoked when it ends (or when it is denied).'
			};
		}
	});
}

/** What a plan answers when no operator asked for it: the alert or the schedule that opened the chat. */
async function planCauseOf(tx: TransactionSql, ctx: ToolContext): Promise<PlanCause | null> {
	if (ctx.watch?.kind === 'schedule') return { schedule: ctx.watch.name };
	const alert = ctx.watch ? await alertOfSession(tx, ctx.sessionId) : null;
	return alert ? { alert } : null;
}
