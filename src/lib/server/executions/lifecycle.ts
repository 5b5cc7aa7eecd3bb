import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import { insertApproval, type ApprovalRoute } from '../db/queries/approvals';
import {
	announceExecution,
	expireStale,
	getExecution,
	interruptLost,
	linkedSessions,
	lockStatus,
	markCancelRequested,
	setDecision,
	setFinished,
	withdrawApproved,
	type ExecutionRow
} from '../db/queries/executions';
import { interruptOrphanedTurns } from '../db/queries/messages';
import type { ExecutionStatus, ExecutionStep } from '../../types/executions';
import { enqueueJob, PRIORITY } from '../jobs/enqueue';

// An execution's life after its request: decided, queued, finished, continued, swept. The SQL is
// in db/queries/executions.ts; this module decides what follows each change, in its transaction.

export const RUN_TASK = 'executions__run';

/** Queues the worker job for an approved execution (one attempt: a mutation never reruns by itself). */
export async function enqueueRun(tx: TransactionSql, executionId: string): Promise<void> {
	await enqueueJob(tx, RUN_TASK, { executionId }, { jobKey: `execution:${executionId}`, maxAttempts: 1, priority: PRIORITY.execution });
}

export type DecideResult =
	| { ok: true; execution: ExecutionRow }
	| { ok: false; reason: 'not_found' | 'already_decided' | 'expired'; status?: ExecutionStatus };

/**
 * Approves or denies one pending execution. A single conditional update decides it, so double
 * clicks, two tabs, or chat assent racing a button produce exactly one decision (and one run).
 */
export async function decideExecution(
	tx: TransactionSql,
	id: string,
	d: { decision: 'approved' | 'denied'; route: ApprovalRoute; operatorId: string | null; reason?: string | null; messageId?: string | null }
): Promise<DecideResult> {
	const u = await setDecision(tx, id, d.decision, d.reason ?? null);
	if (!u.ok) return u;
	await insertApproval(tx, { executionId: id, hash: u.hash, decision: d.decision, route: d.route, reason: d.reason, decidedBy: d.operatorId, messageId: d.messageId });
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
	}
): Promise<boolean> {
	return sql.begin(async (tx) => {
		if (!(await setFinished(tx, id, r))) return false;
		// One pending follow-up sync per host: later finishes replace it (job key) instead of queueing
		// another; the `inventory` queue runs syncs one at a time, so they never take more than one
		// worker slot from executions and turns.
		if (r.refreshHost) await enqueueJob(tx, 'inventory__sync', { host: r.refreshHost }, { queueName: 'inventory', jobKey: `inventory__sync:${r.refreshHost}`, priority: PRIORITY.background });
		await onTerminal(tx, id);
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
	for (const sessionId of await linkedSessions(tx, id)) {
		await enqueueJob(tx, 'agent__continue_session', { sessionId, executionId: id }, {
			jobKey: `continue:${id}:${sessionId}`,
			queueName: `session:${sessionId}`,
			maxAttempts: 3,
			priority: PRIORITY.reply
		});
	}
}

/**
 * Marks running executions whose worker stopped heartbeating as interrupted (they may have
 * partly run; the continuation reads their target back), expires stale approvals, and closes
 * turns whose process died mid-stream.
 */
export async function sweep(sql: Sql): Promise<{ lost: number; expired: number }> {
	return sql.begin(async (tx) => {
		const lost = await interruptLost(tx);
		const expired = await expireStale(tx);
		for (const id of [...lost, ...expired]) await onTerminal(tx, id);
		await interruptOrphanedTurns(tx);
		return { lost: lost.length, expired: expired.length };
	});
}

/** Asks for a running execution to be cancelled: marks it (the card says "cancelling…") and tells its runner. */
export async function requestCancel(tx: TransactionSql, id: string, by: string): Promise<'requested' | 'withdrawn' | { status: ExecutionStatus } | null> {
	if (await withdrawApproved(tx, id)) {
		await onTerminal(tx, id);
		return 'withdrawn';
	}
	// Read after the update (and lock the row): a worker may have claimed it in between.
	const cur = await lockStatus(tx, id);
	if (!cur) return null;
	if (cur.status !== 'running') return { status: cur.status };
	await markCancelRequested(tx, id);
	await announceExecution(tx, { id, requestedBySession: cur.sessionId });
	await emitEvent(tx, { sessionId: cur.sessionId, type: 'execution.cancel', payload: { executionId: id, by } });
	return 'requested';
}
