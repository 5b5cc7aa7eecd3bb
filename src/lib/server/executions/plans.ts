import type { TransactionSql } from 'postgres';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { insertApproval } from '../db/queries/approvals';
import { getExecution, insertExecution } from '../db/queries/executions';
import { lockPlan, markPlanCancelRequested, planApprovalVerifies, setPlanFinished, setStepExecution, type PlanRow } from '../db/queries/plans';
import { endWindowWithPlan } from '../db/queries/assent-windows';
import { planEndNotice, queueNotice } from '../notify/notices';
import { TERMINAL, type ExecutionStatus, type PlanEnd, type Verdict } from '../../types/executions';
import { prepareExecution } from './prepare';
import { logger } from '../log';
import { enqueueAdvance, enqueueRun, queuePlanReport, requestCancel } from './lifecycle';

const log = logger('plans');

// An approved plan runs itself: each step is an execution of the plan, made when the plan reaches
// it and run by the one execution runner (hash check, staleness pre-checks, snapshot, health,
// leftovers). The `plans__advance` job moves the plan on after its approval and after each step's
// end (lifecycle.ts queueContinuations); the agent hears of it once, when the plan has ended.

const endOf = (s: ExecutionStatus): PlanEnd => (s === 'cancelled' ? 'cancelled' : s === 'interrupted' ? 'interrupted' : 'failed');

/**
 * Moves plan `planId` one step on, under its row lock: nothing while its current step runs; the
 * plan ends at a step that did not succeed (or after Stop, or after its last step); else the
 * next step's execution is made (approved by the plan, only if it still prepares to the exact
 * hash the operator approved) and its run queued. A step's execution is made once (its id is
 * written into the plan in the same transaction), so a retried or duplicate job never runs a
 * step twice, nor one after a step that failed.
 */
export async function advancePlan(planId: string): Promise<'running' | 'ended' | 'nothing'> {
	return sql().begin(async (tx) => {
		const plan = await lockPlan(tx, planId);
		if (!plan || plan.status !== 'approved') return 'nothing';
		const current = plan.steps.filter((s) => s.executionId).at(-1);
		if (current) {
			const e = await getExecution(tx, current.executionId!);
			if (e && !TERMINAL.includes(e.status)) return 'running';
			if (e?.status !== 'succeeded')
				return endPlan(
					tx,
					plan,
					plan.cancelRequestedAt ? 'cancelled' : e ? endOf(e.status) : 'failed',
					e ? null : `step ${current.index + 1}'s execution is gone`
				);
		}
		if (plan.cancelRequestedAt) return endPlan(tx, plan, 'cancelled', null);
		const next = plan.steps.find((s) => !s.executionId);
		if (!next) return endPlan(tx, plan, 'succeeded', null);
		// A plan nothing moved on for NOMOS_APPROVAL_TTL_H (no worker for days) does not start a step late.
		if (plan.expiresAt && Date.parse(plan.expiresAt) <= Date.now())
			return endPlan(tx, plan, 'failed', `step ${next.index + 1} was not run: the plan's approval expired before it could start`);
		// Made only by the server with the key outside the database (db/seal.ts): a plan approved or
		// changed with the database's rights alone makes no execution.
		if (!(await planApprovalVerifies(tx, plan))) {
			log.warn(
				{ planId: plan.id, step: next.index + 1 },
				`plan ${plan.id} stopped: its approval's seal does not verify (forged or changed in the database, or another NOMOS_SEAL_KEY)`
			);
			await recordAudit(tx, {
				actor: null,
				action: 'plan.tampered',
				route: 'runner',
				subjectType: 'plan',
				subjectId: plan.id,
				sessionId: plan.sessionId,
				detail: { step: next.index + 1, action: next.action, target: next.target, hash: next.hash }
			});
			return endPlan(tx, plan, 'failed', `step ${next.index + 1} was not run: plan approval seal does not verify: refusing to run`);
		}
		const p = await prepareExecution({ target: next.target, action: next.action, params: next.params, reason: next.why });
		if ('error' in p) return endPlan(tx, plan, 'failed', `step ${next.index + 1} was not run: it no longer checks out (${p.error})`);
		if (p.hash !== next.hash) return endPlan(tx, plan, 'failed', `step ${next.index + 1} was not run: it no longer resolves to exactly what was approved`);
		const e = await insertExecution(tx, p, { sessionId: plan.sessionId, status: 'approved', ttlHours: 0, planId: plan.id, cause: plan.cause });
		if (p.classification !== 'read_only') {
			// What the runner checks before it runs anything: an approval naming this exact hash.
			await insertApproval(tx, {
				executionId: e.id,
				hash: p.hash,
				decision: 'approved',
				route: 'plan',
				decidedBy: plan.decidedBy,
				credential: `plan:${plan.id}`
			});
			await recordAudit(tx, {
				actor: plan.decidedBy ? { id: plan.decidedBy } : null,
				action: 'execution.approved',
				route: 'plan',
				subjectType: 'execution',
				subjectId: e.id,
				sessionId: plan.sessionId,
				detail: { action: p.action, target: p.target, hash: p.hash, command: p.commandPreview, planId: plan.id, step: next.index + 1 }
			});
		}
		await setStepExecution(tx, plan, next.index, e.id);
		await enqueueRun(tx, e.id);
		return 'running';
	});
}

/** Ends a running plan (once), notifies, and queues the one continuation that tells the agent. */
async function endPlan(tx: TransactionSql, plan: PlanRow, status: PlanEnd, error: string | null): Promise<'ended' | 'nothing'> {
	if (!(await setPlanFinished(tx, plan, status, error))) return 'nothing';
	await endWindowWithPlan(tx, plan.sessionId, plan.id);
	await queueNotice(tx, planEndNotice({ ...plan, status }));
	await queuePlanReport(tx, plan);
	return 'ended';
}

/**
 * Stop on a running plan's card: the plan is marked, its current step is cancelled as any
 * execution is (withdrawn when not started yet, stopped on its host when running), and the plan
 * ends `cancelled` when that step has ended; the rest are not run. Null when it is not running.
 */
export async function stopPlan(tx: TransactionSql, planId: string, operatorId: string): Promise<PlanRow | null> {
	const plan = await lockPlan(tx, planId);
	if (!plan || plan.status !== 'approved') return null;
	if (plan.cancelRequestedAt) return plan;
	// The step's row before the plan's event: the order every transaction takes (a run's claim
	// and finish hold the execution row when they emit their events).
	const current = plan.steps.filter((s) => s.executionId).at(-1);
	if (current) await requestCancel(tx, current.executionId!, operatorId);
	await markPlanCancelRequested(tx, plan);
	// Between two steps nothing else would move it on.
	await enqueueAdvance(tx, plan.id);
	return plan;
}

/** What the agent is told when a plan has ended: every step's outcome, what failed, what was not run. */
export function planNote(plan: PlanRow, steps: Array<{ note: string | null; verdict?: Verdict | null }>): string {
	const n = plan.steps.length;
	if (plan.status === 'expired')
		return `The plan "${plan.title}" (${n} steps) expired: nobody approved it in time, so nothing of it was run and it can no longer be approved. What it was based on may have changed since: if the operator still wants it, check again and propose a new plan.`;
	const ran = plan.steps.filter((s) => s.executionId).length;
	// A step whose read-back could not tell is not success: the plan is not reported done on it.
	const unverified = plan.steps.filter((_s, i) => steps[i]?.verdict === 'inconclusive').map((s) => s.index + 1);
	const head =
		plan.status === 'succeeded' && unverified.length
			? `The plan "${plan.title}" (${n} steps) ran to the end, but step ${unverified.join(', ')} is NOT verified (inconclusive read-back): report the plan done only once a later check step or a read-only action of yours has confirmed it.`
			: plan.status === 'succeeded'
				? `The plan "${plan.title}" (${n} steps) ran to the end: every step succeeded.`
				: `The plan "${plan.title}" stopped at step ${Math.max(ran, 1)} of ${n} (${plan.status}${plan.cancelRequestedAt ? ', stopped by the operator' : ''})${plan.error ? `: ${plan.error}` : ''}.`;
	const lines = plan.steps.map((s, i) => `Step ${s.index + 1} (${s.action} on ${s.target}): ${steps[i]?.note ?? 'not run'}`);
	const notRun = plan.steps.filter((s) => !s.executionId);
	const tail =
		plan.status === 'succeeded'
			? ''
			: notRun.length
				? ` Steps ${notRun.map((s) => s.index + 1).join(', ')} were not run; running them (or anything that failed) again needs a new approval.`
				: ' Running anything that failed again needs a new approval.';
	return `${head}\n${lines.join('\n')}${tail ? `\n${tail.trim()}` : ''}`;
}
