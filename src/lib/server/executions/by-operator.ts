import { sql } from '../db/index';
import { revokeWindow } from '../db/queries/assent-windows';
import { recordAudit } from '../db/queries/audit';
import { Refusal } from '../refusal';
import type { Credential } from './authority';
import { operatorDecides, operatorDecidesPlan, tokenDetail, type ApiTokenRef, type OperatorRoute } from './decisions';
import { requestCancel } from './lifecycle';
import { stopPlan } from './plans';

// What an operator does to executions and plans from a page or the API, each in its own
// transaction and audited with the route it came by (and the API token, when one was used).

type Actor = { id: string; username: string };
type By = { actor: Actor; route: OperatorRoute; token: ApiTokenRef | null | undefined };

/** An operator's decision on one execution (see operatorDecides: NotAllowed is thrown before anything is written). */
export function decideAsOperator(
	executionId: string,
	d: { decision: 'approved' | 'denied'; route: OperatorRoute; operatorId: string; credential: Credential; reason: string | null }
) {
	return sql().begin((tx) => operatorDecides(tx, executionId, d));
}

/** An operator's decision on a plan (see operatorDecidesPlan); null when it was already decided or replaced; Refusal when it expired. */
export function decidePlanAsOperator(
	planId: string,
	d: { decision: 'approved' | 'denied'; operatorId: string; credential: Credential; reason: string | null }
) {
	return sql().begin((tx) => operatorDecidesPlan(tx, planId, d));
}

/** Stops a running execution (its remote command is killed) or withdraws an approved one not yet started. */
export function cancelExecution(executionId: string, by: By): Promise<{ ok: true }> {
	return sql().begin(async (tx) => {
		const r = await requestCancel(tx, executionId, by.actor.id);
		if (r === null) throw new Refusal('NOT_FOUND', 'No such execution.');
		if (typeof r === 'object') throw new Refusal('CONFLICT', `This execution is ${r.status}; only approved or running ones can be cancelled.`);
		await recordAudit(tx, {
			actor: by.actor,
			action: 'execution.cancelled',
			route: by.route,
			subjectType: 'execution',
			subjectId: executionId,
			detail: { how: r, ...tokenDetail(by.token) }
		});
		return { ok: true as const };
	});
}

/** Stop on a running plan: its current step is cancelled, the rest are not run. */
export function stopRunningPlan(planId: string, by: By): Promise<{ ok: true }> {
	return sql().begin(async (tx) => {
		const plan = await stopPlan(tx, planId, by.actor.id);
		if (!plan) throw new Refusal('CONFLICT', 'This plan is not running.');
		await recordAudit(tx, {
			actor: by.actor,
			action: 'plan.stopped',
			route: by.route,
			subjectType: 'plan',
			subjectId: plan.id,
			sessionId: plan.sessionId,
			detail: { title: plan.title, ...tokenDetail(by.token) }
		});
		return { ok: true as const };
	});
}

/** Closes the session's assent window now; whether there was one open. */
export function revokeAssentWindow(sessionId: string, by: By): Promise<boolean> {
	return sql().begin(async (tx) => {
		const done = await revokeWindow(tx, sessionId, by.actor.id);
		if (done)
			await recordAudit(tx, {
				actor: by.actor,
				action: 'assent_window.revoked',
				route: by.route,
				subjectType: 'session',
				subjectId: sessionId,
				sessionId,
				detail: tokenDetail(by.token)
			});
		return done;
	});
}
