import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { BeforeApproval, PlanEnd, PlanRow, PlanStep, RequestCause } from '../../../types/executions';
import { emitEvent } from './events';
import { seal, verifySeal, type SealFields } from '../seal';
import type { plans } from '../schema';
import type { Expect, SameColumns } from '../same-type';
import { env } from '../../env';

export type { PlanRow, PlanStep };

// PlanRow (src/lib/types, what the browser gets) copies the table's columns: held to them (its
// steps are typed in the copy; the table's jsonb says only unknown[]).
type _PlanRowColumns = Expect<SameColumns<Omit<PlanRow, 'steps'>, typeof plans.$inferSelect>>;

/** A step as proposed: a prepared request and why the agent wants it. */
export type NewPlanStep = {
	action: string;
	target: string;
	params: Record<string, unknown>;
	hash: string;
	commandPreview: string;
	classification: string;
	why: string;
	beforeApproval?: BeforeApproval | null;
};

const columns = (sql: Sql | TransactionSql) =>
	sql`id, session_id as "sessionId", title, steps, status, created_at as "createdAt", decided_at as "decidedAt", decided_by as "decidedBy", expires_at as "expiresAt",
	finished_at as "finishedAt", error, cancel_requested_at as "cancelRequestedAt", alert_resolved_at as "alertResolvedAt", cause`;

/** The API token whose messages caused plan `id` (null: none did): it never approves the plan. */
export async function planRequesterToken(sql: Sql | TransactionSql, id: string): Promise<string | null> {
	const [row] = await sql<{ t: string | null }[]>`select requested_with_token as t from plans where id = ${id}`;
	return row?.t ?? null;
}

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

/**
 * Stores a proposed plan; an older proposed plan of the session is superseded (announced: it no
 * longer waits for approval). It waits for approval `ttlHours` (NOMOS_APPROVAL_TTL_H, as an
 * execution request does): then the sweep marks it `expired` and nobody can approve it.
 */
export async function insertPlan(
	tx: TransactionSql,
	sessionId: string,
	title: string,
	steps: NewPlanStep[],
	callKey: string | null = null,
	cause: RequestCause | null = null,
	ttlHours: number = env().NOMOS_APPROVAL_TTL_H
): Promise<PlanRow> {
	const superseded = await tx<{ id: string }[]>`update plans set status = 'superseded' where session_id = ${sessionId} and status = 'proposed' returning id`;
	for (const p of superseded) await emitEvent(tx, { sessionId, type: 'plan.updated', payload: { planId: p.id } });
	const planSteps: PlanStep[] = steps.map((s, index) => ({
		index,
		action: s.action,
		target: s.target,
		params: s.params,
		why: s.why,
		hash: s.hash,
		commandPreview: s.commandPreview,
		classification: s.classification,
		executionId: null,
		...(s.beforeApproval ? { beforeApproval: s.beforeApproval } : {})
	}));
	const [row] = await tx<PlanRow[]>`
		insert into plans (session_id, title, steps, call_key, cause, requested_with_token, expires_at) values (${sessionId}, ${title}, ${JSON.stringify(planSteps)}::text::jsonb,
			(select case when exists (select 1 from plans where call_key = ${callKey}) then null else ${callKey}::text end),
			${cause ? JSON.stringify(cause) : null}::text::jsonb, ${cause?.tokenId ?? null}, now() + make_interval(secs => ${ttlHours * 3600}))
		returning ${columns(tx)}`;
	await emitEvent(tx, { sessionId, type: 'plan.updated', payload: { planId: row.id } });
	return row;
}

/**
 * Whether plan `id` can be decided now, its row locked for the rest of the transaction (so the
 * sweep's expiry and a second operator's decision wait for it, and see what it decided): a
 * proposed plan past its `expires_at` (or without one) is `expired` before the sweep has marked it.
 */
export async function lockPlanForDecision(tx: TransactionSql, id: string): Promise<'open' | 'expired' | 'already_decided' | 'not_found'> {
	const [cur] = await tx<{ status: PlanRow['status']; expired: boolean }[]>`
		select status, (expires_at is null or expires_at <= now()) as expired from plans where id = ${id} for update`;
	if (!cur) return 'not_found';
	if (cur.status === 'expired' || (cur.status === 'proposed' && cur.expired)) return 'expired';
	return cur.status === 'proposed' ? 'open' : 'already_decided';
}

/** Approves or denies a proposed, unexpired plan with one conditional update (null: it was not open). */
export async function decidePlan(
	tx: TransactionSql,
	id: string,
	decision: 'approved' | 'denied',
	operatorId: string,
	ttlHours: number
): Promise<PlanRow | null> {
	// The decision is sealed over the steps' hashes (db/seal.ts), in the statement that makes it:
	// advancePlan makes no step's execution for a plan whose seal does not verify.
	const open = tx`status = 'proposed' and expires_at > now()`;
	const [cur] = await tx<{ steps: PlanStep[] }[]>`select steps from plans where id = ${id} and ${open} for update`;
	if (!cur) return null;
	const decidedAt = Date.now();
	const mac = await seal(planSealFields({ id, steps: cur.steps, decision, decidedBy: operatorId, decidedAt }));
	const [row] = await tx<PlanRow[]>`
		update plans set status = ${decision}, decided_at = ${new Date(decidedAt).toISOString()}::timestamptz, decided_by = ${operatorId}, mac = ${mac},
			expires_at = case when ${decision} = 'approved' then now() + make_interval(secs => ${ttlHours * 3600}) end
		where id = ${id} and ${open} returning ${columns(tx)}`;
	if (!row) return null;
	await emitEvent(tx, { sessionId: row.sessionId, type: 'plan.updated', payload: { planId: row.id, decision } });
	return row;
}

/** What a plan's seal covers: the plan, its steps' hashes in order, who decided it and when. */
function planSealFields(p: {
	id: string;
	steps: Pick<PlanStep, 'hash'>[];
	decision: 'approved' | 'denied';
	decidedBy: string | null;
	decidedAt: number;
}): SealFields {
	return {
		executionId: `plan:${p.id}`,
		hash: p.steps.map((s) => s.hash).join(','),
		decision: p.decision,
		route: 'plan',
		decidedBy: p.decidedBy,
		// A plan's own seal covers its decider, not which of their credentials (plans keep no credential column).
		credential: null,
		decidedAt: p.decidedAt
	};
}

/** True when the approved plan's seal verifies over its steps as they are stored now. */
export async function planApprovalVerifies(tx: TransactionSql, plan: PlanRow): Promise<boolean> {
	const [r] = await tx<(Pick<typeof plans.$inferSelect, 'mac' | 'decidedBy'> & { decidedAt: string | null })[]>`
		select mac, decided_by::text as "decidedBy", floor(extract(epoch from decided_at) * 1000)::bigint::text as "decidedAt" from plans where id = ${plan.id}`;
	if (!r?.decidedAt) return false;
	return verifySeal(planSealFields({ id: plan.id, steps: plan.steps, decision: 'approved', decidedBy: r.decidedBy, decidedAt: Number(r.decidedAt) }), r.mac);
}

/** Locks a plan's row for the rest of the transaction (one advance of a plan at a time). */
export async function lockPlan(tx: TransactionSql, id: string): Promise<PlanRow | null> {
	const [row] = await tx<PlanRow[]>`select ${columns(tx)} from plans where id = ${id} for update`;
	return row ?? null;
}

/** Records which execution runs step `index` (only while that step has none). */
export async function setStepExecution(tx: TransactionSql, plan: PlanRow, index: number, executionId: string): Promise<void> {
	const steps = plan.steps.map((s) => (s.index === index ? { ...s, executionId } : s));
	await tx`update plans set steps = ${JSON.stringify(steps)}::text::jsonb where id = ${plan.id} and status = 'approved'`;
	await emitEvent(tx, { sessionId: plan.sessionId, type: 'plan.updated', payload: { planId: plan.id } });
}

/** Ends a running plan (only from `approved`); false when it had already ended. */
export async function setPlanFinished(tx: TransactionSql, plan: PlanRow, status: PlanEnd, error: string | null): Promise<boolean> {
	const rows = await tx`update plans set status = ${status}, finished_at = now(), error = ${error} where id = ${plan.id} and status = 'approved' returning id`;
	if (!rows.length) return false;
	await emitEvent(tx, { sessionId: plan.sessionId, type: 'plan.updated', payload: { planId: plan.id, finished: status } });
	return true;
}

/** Marks Stop on a running plan; false when it is not running (or was already stopped). */
export async function markPlanCancelRequested(tx: TransactionSql, plan: PlanRow): Promise<boolean> {
	const rows =
		await tx`update plans set cancel_requested_at = now() where id = ${plan.id} and status = 'approved' and cancel_requested_at is null returning id`;
	if (rows.length) await emitEvent(tx, { sessionId: plan.sessionId, type: 'plan.updated', payload: { planId: plan.id } });
	return rows.length > 0;
}

/**
 * Claims the session's ended plans not yet told to its agent (and the links of their steps'
 * executions, which the plan's note tells instead of one note each), so one is told once.
 */
export async function claimFinishedPlans(tx: TransactionSql, sessionId: string): Promise<PlanRow[]> {
	const rows = await tx<PlanRow[]>`
		update plans set reported_at = now()
		where session_id = ${sessionId} and status in ('succeeded', 'failed', 'cancelled', 'interrupted', 'expired') and reported_at is null
		returning ${columns(tx)}`;
	if (rows.length) {
		await tx`update execution_sessions l set continued_at = now() from executions e
			where l.execution_id = e.id and l.session_id = ${sessionId} and l.continued_at is null and e.plan_id = any(${rows.map((r) => r.id)}::uuid[])`;
	}
	return rows.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/**
 * Proposed plans nobody decided before their `expires_at` become `expired` (announced: the card
 * shows it, its buttons go); returns them so each is told to its agent once (queuePlanReport).
 */
export async function expireStalePlans(tx: TransactionSql): Promise<Pick<PlanRow, 'id' | 'sessionId'>[]> {
	const rows = await tx<Pick<PlanRow, 'id' | 'sessionId'>[]>`
		update plans set status = 'expired', error = 'approval expired: nobody decided in time', finished_at = now()
		where status = 'proposed' and (expires_at is null or expires_at <= now()) returning id, session_id as "sessionId"`;
	for (const p of rows) await emitEvent(tx, { sessionId: p.sessionId, type: 'plan.updated', payload: { planId: p.id, expired: true } });
	return rows;
}

/** The running plan of the session one of whose steps has exactly this hash, with that step. */
export async function runningPlanStep(sql: Sql | TransactionSql, sessionId: string, hash: string): Promise<{ plan: PlanRow; step: PlanStep } | null> {
	const [plan] = await sql<PlanRow[]>`
		select ${columns(sql)} from plans
		where session_id = ${sessionId} and status = 'approved' and steps @> ${JSON.stringify([{ hash }])}::text::jsonb
		order by decided_at desc limit 1`;
	const step = plan?.steps.find((s) => s.hash === hash);
	return plan && step ? { plan, step } : null;
}

/** Plans waiting for approval or running (all of them), and those that ended in the last `hours` (Ops), newest first. */
export async function listRecentPlans(sql: Sql, hours = 24, limit = 20): Promise<PlanRow[]> {
	return sql<PlanRow[]>`
		(select ${columns(sql)} from plans where status in ('proposed', 'approved'))
		union all
		(select ${columns(sql)} from plans where status not in ('proposed', 'approved') and finished_at > now() - make_interval(secs => ${hours * 3600})
			order by finished_at desc limit ${limit})`;
}

/** The plan a tool call stored (its call key); null: none. */
export async function planByCallKey(sql: Sql | TransactionSql, key: string): Promise<Pick<PlanRow, 'id' | 'status'> | null> {
	const [row] = await sql<Pick<PlanRow, 'id' | 'status'>[]>`select id, status from plans where call_key = ${key}`;
	return row ?? null;
}
