import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import { insertApproval, type ApprovalRoute } from '../db/queries/approvals';
import {
	announceExecution,
	expireStale,
	executionPlanId,
	getExecution,
	interruptLost,
	linkedSessions,
	lockStatus,
	markCancelRequested,
	setDecision,
	setFinished,
	withdrawApproved,
	type DecisionUpdate,
	type ExecutionRow
} from '../db/queries/executions';
import { closeSessionIncidentsIfDone } from '../db/queries/incidents';
import { expireStalePlans } from '../db/queries/plans';
import { handOverForResume, interruptAbandoned, listStranded } from '../db/queries/stranded';
import { RESUMABLE_ACTIONS } from '../proxmox/actions';
import { handOverAndResume } from '../conversation/hand-over';
import { requestTurn } from '../conversation/turn-queue';
import type { ExecutionStatus, ExecutionStep, Verdict } from '../../types/executions';
import { enqueueJob, PRIORITY } from '../jobs/enqueue';

// An execution's life after its request: decided, queued, finished, continued, swept. The SQL is
// in db/queries/executions.ts; this module decides what follows each change, in its transaction.

export const RUN_TASK = 'executions__run';

/**
 * Queues the worker job for an approved execution. The job may run more than once (its worker
 * died before it began): safe, because only one run ever claims the execution (`approved` →
 * `running`, claimExecution), so the mutation itself never runs twice.
 */
export async function enqueueRun(tx: TransactionSql, executionId: string): Promise<void> {
	await enqueueJob(tx, RUN_TASK, { executionId }, { jobKey: `execution:${executionId}`, maxAttempts: 5, priority: PRIORITY.execution });
}

/** How many times one execution is taken over after its process stopped; after that it ends interrupted. */
export const MAX_RESUMES = 3;

/**
 * In the transaction that finds their process gone: running executions of repeatable actions
 * (proxmox/actions.ts `resume`) go back to `approved` under their approval (same hash, no new
 * approval) with `why`, and their run job is queued again (superseding the dead copy), so a live
 * worker finishes them (executions/resume.ts). Only one worker claims each (claimExecution).
 * Called before the rest are marked interrupted; returns their ids.
 */
export async function handOverToResume(tx: TransactionSql, from: Parameters<typeof handOverForResume>[1], why: string): Promise<string[]> {
	const ids = await handOverForResume(tx, from, RESUMABLE_ACTIONS, MAX_RESUMES, why);
	for (const id of ids) {
		await announceExecution(tx, (await getExecution(tx, id))!);
		await enqueueRun(tx, id);
	}
	return ids;
}

export type DecideResult = { ok: true; execution: ExecutionRow } | Extract<DecisionUpdate, { ok: false }>;

/**
 * Approves or denies one pending execution. A single conditional update decides it, so double
 * clicks, two tabs, or chat assent racing a button produce exactly one decision (and one run).
 */
export async function decideExecution(
	tx: TransactionSql,
	id: string,
	d: {
		decision: 'approved' | 'denied';
		route: ApprovalRoute;
		operatorId: string | null;
		/** Which credential decided (authority.ts credentialRef), sealed into the approval. */
		credential: string;
		reason?: string | null;
		messageId?: string | null;
	}
): Promise<DecideResult> {
	const u = await setDecision(tx, id, d.decision, d.reason ?? null);
	if (!u.ok) return u;
	await insertApproval(tx, {
		executionId: id,
		hash: u.hash,
		decision: d.decision,
		route: d.route,
		reason: d.reason,
		decidedBy: d.operatorId,
		credential: d.credential,
		messageId: d.messageId
	});
	await announceExecution(tx, u, 'approval.decided', { decision: d.decision, route: d.route });
	if (d.decision === 'approved') await enqueueRun(tx, id);
	else await onTerminal(tx, id);
	return { ok: true, execution: (await getExecution(tx, id))! };
}

/**
 * Moves a running execution to its terminal state (only from `running`), and in the same
 * transaction queues what follows: the session continuation and an inventory refresh.
 */
export async function finishExecution(
	sql: Sql,
	id: string,
	r: {
		status: 'succeeded' | 'failed' | 'cancelled' | 'interrupted';
		result: string | null;
		error: string | null;
		steps: ExecutionStep[];
		refreshHost?: string | null;
		leftovers?: string | null;
		/** The read-back's verdict on a mutation that ran (executions/verdict.ts). */
		verdict?: { verdict: Verdict; detail: string } | null;
	}
): Promise<boolean> {
	return sql.begin(async (tx) => {
		if (!(await setFinished(tx, id, r))) return false;
		// One pending follow-up sync per host: later finishes replace it (job key) instead of queueing
		// another; the `inventory` queue runs syncs one at a time, so they never take more than one
		// worker slot from executions and turns.
		if (r.refreshHost)
			await enqueueJob(
				tx,
				'inventory__sync',
				{ host: r.refreshHost },
				{ queueName: 'inventory', jobKey: `inventory__sync:${r.refreshHost}`, priority: PRIORITY.background }
			);
		await onTerminal(tx, id);
		// A verdict landed: the fix verified may be what its session's incident waited for to close.
		if (r.verdict) {
			const e = (await getExecution(tx, id))!;
			if (e.requestedBySession) await closeSessionIncidentsIfDone(tx, e.requestedBySession);
		}
		return true;
	});
}

/**
 * Called in the transaction that made an execution terminal: announces it and queues the
 * continuation for every linked session (one job per execution and session).
 */
export async function onTerminal(tx: TransactionSql, id: string): Promise<void> {
	const e = (await getExecution(tx, id))!;
	await announceExecution(tx, e, 'execution.updated', { terminal: e.status });
	await queueContinuations(tx, id);
}

export const PLAN_TASK = 'plans__advance';

/**
 * Queues the job that moves an approved plan on (executions/plans.ts advancePlan): after its
 * approval, and whenever its current step's execution ends. One key per plan; the job is
 * idempotent (it reads where the plan stands under the plan's row lock), so an extra copy is harmless.
 */
export async function enqueueAdvance(tx: TransactionSql, planId: string): Promise<void> {
	await enqueueJob(tx, PLAN_TASK, { planId }, { jobKey: `plan:${planId}`, maxAttempts: 5, priority: PRIORITY.execution });
}

/** Queues the one continuation that tells the agent how a plan ended. */
export async function queuePlanReport(tx: TransactionSql, plan: { id: string; sessionId: string }): Promise<void> {
	await enqueueJob(
		tx,
		'agent__continue_session',
		{ sessionId: plan.sessionId, planId: plan.id },
		{
			jobKey: `continue-plan:${plan.id}`,
			queueName: `session:${plan.sessionId}`,
			maxAttempts: 3,
			priority: PRIORITY.reply
		}
	);
}

/**
 * Queues what follows a terminal execution: for a plan's step, the plan's next move (the agent
 * hears of it once, when the plan ends); otherwise the continuation of every linked session (one
 * job per pair).
 */
export async function queueContinuations(tx: TransactionSql, id: string): Promise<void> {
	const planId = await executionPlanId(tx, id);
	if (planId) return enqueueAdvance(tx, planId);
	for (const sessionId of await linkedSessions(tx, id)) {
		await enqueueJob(
			tx,
			'agent__continue_session',
			{ sessionId, executionId: id },
			{
				jobKey: `continue:${id}:${sessionId}`,
				queueName: `session:${sessionId}`,
				maxAttempts: 3,
				priority: PRIORITY.reply
			}
		);
	}
}

/**
 * The periodic safety net behind recovery/dead-processes.ts (which acts within seconds of a process's
 * death): marks running executions whose runner is gone — or, with no runner recorded, whose
 * lease ran out — interrupted (they may have partly run; the continuation reads their target
 * back), expires stale approvals (of executions and of proposed plans: each told to its agent
 * once, as an execution's end is), and hands over replies nobody writes any more.
 */
export async function sweep(sql: Sql): Promise<{ lost: number; expired: number; plansExpired: number; resumed: number }> {
	return sql.begin(async (tx) => {
		await handOverToResume(tx, { unowned: true }, 'the worker process running it is gone');
		const lost = [...(await interruptAbandoned(tx, { unowned: true })), ...(await interruptLost(tx))];
		const expired = await expireStale(tx);
		for (const id of [...lost, ...expired]) await onTerminal(tx, id);
		const plansExpired = await expireStalePlans(tx);
		for (const p of plansExpired) await queuePlanReport(tx, p);
		const resumed = await handOverAndResume(tx, { unowned: true });
		return { lost: lost.length, expired: expired.length, plansExpired: plansExpired.length, resumed };
	});
}

/**
 * Run by recovery after a worker process died (work is stranded only then). Work whose job is gone (it died with its worker after its last attempt, or was never added by
 * an older version): an approved execution nothing will run, a finished one nobody continued, an
 * operator message no turn will answer. Each gets its job again; every one of them is idempotent
 * (claimExecution, claimFinishedForSession, claimQueued), so a job that was only slow costs nothing.
 */
export async function requeueStranded(tx: TransactionSql): Promise<number> {
	const s = await listStranded(tx);
	for (const id of s.approved) await enqueueRun(tx, id);
	for (const id of s.finished) await queueContinuations(tx, id);
	for (const sessionId of s.queued) await requestTurn(tx, { sessionId, origin: 'chat' });
	for (const id of s.plans) await enqueueAdvance(tx, id);
	for (const p of s.unreported) await queuePlanReport(tx, p);
	return s.approved.length + s.finished.length + s.queued.length + s.plans.length + s.unreported.length;
}

/** Asks for a running execution to be cancelled: marks it (the card says "cancelling…") and tells its runner. */
export async function requestCancel(tx: TransactionSql, id: string, by: string): Promise<'requested' | 'withdrawn' | { status: ExecutionStatus } | null> {
	if (await withdrawApproved(tx, id)) {
		await onTerminal(tx, id);
		return 'withdrawn';
	}
	// Read after the update (and lock the row): a worker may have claimed it in between. Still
	// `approved` here: it waits to be resumed (its first run may have partly run), so the resume
	// that claims it stops what is left on the host and ends it (executions/resume.ts).
	const cur = await lockStatus(tx, id);
	if (!cur) return null;
	if (cur.status !== 'running' && cur.status !== 'approved') return { status: cur.status };
	await markCancelRequested(tx, id);
	await announceExecution(tx, { id, requestedBySession: cur.sessionId });
	await emitEvent(tx, { sessionId: cur.sessionId, type: 'execution.cancel', payload: { executionId: id, by } });
	return 'requested';
}
