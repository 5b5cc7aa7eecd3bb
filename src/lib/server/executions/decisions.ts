import type { TransactionSql } from 'postgres';
import { emitEvent } from '../db/queries/events';
import { env } from '../env';
import { addSystemNote } from '../agent/continuation';
import { requestTurn } from '../agent/turns';
import { openWindow } from './assent';
import { decidePlan } from './plans';
import { decideExecution, type DecideResult } from './store';

/**
 * An operator's decision on one execution, by any route. Approving opens (or extends) the
 * session's assent window and records who, when and how as an audit event.
 */
export async function operatorDecides(
	tx: TransactionSql,
	executionId: string,
	d: { decision: 'approved' | 'denied'; route: 'button' | 'ops' | 'chat'; operatorId: string; reason?: string | null }
): Promise<DecideResult> {
	const r = await decideExecution(tx, executionId, d);
	if (!r.ok) return r;
	const sessionId = r.execution.requestedBySession;
	if (d.decision === 'approved' && sessionId) await openWindow(tx, sessionId, d.operatorId, env().NOMOS_ASSENT_WINDOW_MIN);
	await emitEvent(tx, {
		sessionId,
		type: 'audit.decision',
		payload: { executionId, decision: d.decision, route: d.route, operatorId: d.operatorId, reason: d.reason ?? null }
	});
	return r;
}

/**
 * Approving a plan approves exactly its steps (by hash), opens the assent window and resumes
 * the agent so it requests them; denying tells the agent why.
 */
export async function operatorDecidesPlan(tx: TransactionSql, planId: string, d: { decision: 'approved' | 'denied'; operatorId: string; reason?: string | null }) {
	const plan = await decidePlan(tx, planId, d.decision, d.operatorId);
	if (!plan) return null;
	if (d.decision === 'approved') {
		await openWindow(tx, plan.sessionId, d.operatorId, env().NOMOS_ASSENT_WINDOW_MIN);
		await addSystemNote(
			tx,
			plan.sessionId,
			'plan',
			`The operator approved the plan "${plan.title}" (${plan.steps.length} steps). Request its steps in order with request_execution, exactly as proposed; each runs without another approval.`,
			{ planId }
		);
	} else {
		await addSystemNote(tx, plan.sessionId, 'plan', `The operator denied the plan "${plan.title}"${d.reason ? `: ${d.reason}` : ''}. Nothing was run.`, { planId });
	}
	await emitEvent(tx, { sessionId: plan.sessionId, type: 'audit.decision', payload: { planId, decision: d.decision, route: 'button', operatorId: d.operatorId } });
	await requestTurn(tx, { sessionId: plan.sessionId, origin: 'resume' });
	return plan;
}
