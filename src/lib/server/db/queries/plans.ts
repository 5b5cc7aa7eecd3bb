import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { PlanRow, PlanStep } from '../../../types/executions';
import { emitEvent } from './events';

export type { PlanRow, PlanStep };

/** A step as proposed: a prepared request and why the agent wants it. */
export type NewPlanStep = { action: string; target: string; params: Record<string, unknown>; hash: string; commandPreview: string; classification: string; why: string };

const columns = (sql: Sql | TransactionSql) =>
	sql`id, session_id as "sessionId", title, steps, status, created_at as "createdAt", decided_at as "decidedAt", decided_by as "decidedBy", expires_at as "expiresAt"`;

export async function getPlan(sql: Sql | TransactionSql, id: string): Promise<PlanRow | null> {
	const [row] = await sql<PlanRow[]>`select ${columns(sql)} from plans where id = ${id}`;
	return row ?? null;
}

export async function getPlansByIds(sql: Sql, ids: string[]): Promise<PlanRow[]> {
	if (!ids.length) return [];
	return sql<PlanRow[]>`select ${columns(sql)} from plans where id = any(${ids}::uuid[])`;
}

export async function listSessionPlans(sql: Sql, sessionId: string): Promise<PlanRow[]> {
	return sql<PlanRow[]>`select ${columns(sql)} from plans where session_id = ${sessionId} order by created_at`;
}

/** Stores a proposed plan; an older proposed plan of the session is superseded. */
export async function insertPlan(tx: TransactionSql, sessionId: string, title: string, steps: NewPlanStep[], callKey: string | null = null): Promise<PlanRow> {
	await tx`update plans set status = 'superseded' where session_id = ${sessionId} and status = 'proposed'`;
	const planSteps: PlanStep[] = steps.map((s, index) => ({
		index,
		action: s.action,
		target: s.target,
		params: s.params,
		why: s.why,
		hash: s.hash,
		commandPreview: s.commandPreview,
		classification: s.classification,
		executionId: null
	}));
	const [row] = await tx<PlanRow[]>`
		insert into plans (session_id, title, steps, call_key) values (${sessionId}, ${title}, ${JSON.stringify(planSteps)}::text::jsonb,
			(select case when exists (select 1 from plans where call_key = ${callKey}) then null else ${callKey}::text end))
		returning ${columns(tx)}`;
	await emitEvent(tx, { sessionId, type: 'plan.updated', payload: { planId: row.id } });
	return row;
}

/**
 * Finds an approved, unexpired, not yet used plan step of the session with exactly this hash and
 * marks it used by the execution. A step is used once per decision: whatever its execution's
 * outcome (failed, interrupted), running it again needs a new approval. Returns who approved
 * the plan, or null (then it needs its own approval).
 */
export async function consumePlanStep(tx: TransactionSql, sessionId: string, hash: string, executionId: string): Promise<{ planId: string; decidedBy: string | null } | null> {
	const plans = await tx<PlanRow[]>`
		select ${columns(tx)} from plans
		where session_id = ${sessionId} and status = 'approved' and (expires_at is null or expires_at > now())
		  and steps @> ${JSON.stringify([{ hash, executionId: null }])}::text::jsonb
		order by decided_at desc limit 1 for update`;
	const plan = plans[0];
	if (!plan) return null;
	const steps = plan.steps.map((s) => ({ ...s }));
	const step = steps.find((s) => s.hash === hash && s.executionId === null)!;
	step.executionId = executionId;
	await tx`update plans set steps = ${JSON.stringify(steps)}::text::jsonb where id = ${plan.id}`;
	await emitEvent(tx, { sessionId, type: 'plan.updated', payload: { planId: plan.id } });
	return { planId: plan.id, decidedBy: plan.decidedBy };
}

/** Approves or denies a proposed plan with one conditional update. */
export async function decidePlan(tx: TransactionSql, id: string, decision: 'approved' | 'denied', operatorId: string, ttlHours: number): Promise<PlanRow | null> {
	const [row] = await tx<PlanRow[]>`
		update plans set status = ${decision}, decided_at = now(), decided_by = ${operatorId},
			expires_at = case when ${decision} = 'approved' then now() + make_interval(secs => ${ttlHours * 3600}) end
		where id = ${id} and status = 'proposed' returning ${columns(tx)}`;
	if (!row) return null;
	await emitEvent(tx, { sessionId: row.sessionId, type: 'plan.updated', payload: { planId: row.id, decision } });
	return row;
}
