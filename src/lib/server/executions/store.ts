import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import type { Classification, ExecutionStatus, ExecutionStep } from '../db/schema';
import { enqueueJob } from '../jobs/enqueue';
import type { PreparedExecution } from './prepare';
import type { AssentCandidate } from './typed-assent';

export type ExecutionRow = {
	id: string;
	requestedBySession: string | null;
	planId: string | null;
	retryOf: string | null;
	hostName: string | null;
	target: string;
	action: string;
	params: Record<string, unknown>;
	classification: Classification;
	hash: string;
	commandPreview: string;
	reason: string;
	status: ExecutionStatus;
	steps: ExecutionStep[];
	result: string | null;
	error: string | null;
	createdAt: string;
	expiresAt: string | null;
	approvedAt: string | null;
	startedAt: string | null;
	finishedAt: string | null;
	cancelRequestedAt: string | null;
	leftovers: string | null;
	decision: { decision: string; route: string; reason: string | null; decidedBy: string | null; decidedAt: string } | null;
};

export const TERMINAL: ExecutionStatus[] = ['succeeded', 'failed', 'cancelled', 'interrupted', 'denied', 'expired'];
export const RUN_TASK = 'executions__run';

const columns = (sql: Sql | TransactionSql) => sql`
	e.id, e.requested_by_session as "requestedBySession", e.plan_id as "planId", e.retry_of as "retryOf",
	e.host_name as "hostName", e.target, e.action, e.params, e.classification, e.hash,
	e.command_preview as "commandPreview", e.reason, e.status, e.steps, e.result, e.error,
	e.created_at as "createdAt", e.expires_at as "expiresAt", e.approved_at as "approvedAt",
	e.started_at as "startedAt", e.finished_at as "finishedAt",
	e.cancel_requested_at as "cancelRequestedAt", e.leftovers,
	(select json_build_object('decision', a.decision, 'route', a.route, 'reason', a.reason,
		'decidedBy', (select username from operators o where o.id = a.decided_by), 'decidedAt', a.decided_at)
	 from approvals a where a.execution_id = e.id) as decision`;

export async function getExecution(sql: Sql | TransactionSql, id: string): Promise<ExecutionRow | null> {
	const [row] = await sql<ExecutionRow[]>`select ${columns(sql)} from executions e where e.id = ${id}`;
	return row ?? null;
}

export async function getExecutionsByIds(sql: Sql, ids: string[]): Promise<ExecutionRow[]> {
	if (!ids.length) return [];
	return sql<ExecutionRow[]>`select ${columns(sql)} from executions e where e.id = any(${ids}::uuid[])`;
}

export async function listSessionExecutions(sql: Sql, sessionId: string): Promise<ExecutionRow[]> {
	return sql<ExecutionRow[]>`
		select ${columns(sql)} from executions e
		where e.id in (select execution_id from execution_sessions where session_id = ${sessionId})
		order by e.created_at`;
}

export async function listRecentExecutions(sql: Sql, limit = 100): Promise<ExecutionRow[]> {
	return sql<ExecutionRow[]>`select ${columns(sql)} from executions e order by e.created_at desc limit ${limit}`;
}

async function announce(tx: TransactionSql, e: { id: string; requestedBySession: string | null }, type = 'execution.updated', extra: Record<string, unknown> = {}) {
	await emitEvent(tx, { sessionId: e.requestedBySession, type, payload: { executionId: e.id, ...extra } });
}

/** Records a new execution (and its link to the session) with its first status. */
export async function insertExecution(
	tx: TransactionSql,
	p: PreparedExecution,
	opts: { sessionId: string | null; status: 'awaiting_approval' | 'approved'; ttlHours: number; planId?: string | null; retryOf?: string | null }
): Promise<ExecutionRow> {
	const [row] = await tx<{ id: string }[]>`
		insert into executions (requested_by_session, plan_id, retry_of, host_name, target, action, params, classification,
			hash, command_preview, reason, status, expires_at, approved_at)
		values (${opts.sessionId}, ${opts.planId ?? null}, ${opts.retryOf ?? null}, ${p.hostName}, ${p.target}, ${p.action},
			${JSON.stringify(p.params)}::text::jsonb, ${p.classification}, ${p.hash}, ${p.commandPreview}, ${p.reason},
			${opts.status},
			${opts.status === 'awaiting_approval' ? tx`now() + make_interval(secs => ${opts.ttlHours * 3600})` : null},
			${opts.status === 'approved' ? tx`now()` : null})
		returning id`;
	if (opts.sessionId) {
		await tx`insert into execution_sessions (execution_id, session_id) values (${row.id}, ${opts.sessionId})`;
	}
	await announce(tx, { id: row.id, requestedBySession: opts.sessionId }, 'execution.updated', { created: true });
	return (await getExecution(tx, row.id))!;
}

/** Queues the worker job for an approved execution (one attempt: a mutation never reruns by itself). */
export async function enqueueRun(tx: TransactionSql, executionId: string): Promise<void> {
	await enqueueJob(tx, RUN_TASK, { executionId }, { jobKey: `execution:${executionId}`, maxAttempts: 1 });
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
	d: { decision: 'approved' | 'denied'; route: 'button' | 'ops' | 'chat' | 'plan'; operatorId: string | null; reason?: string | null; messageId?: string | null }
): Promise<DecideResult> {
	const rows = await tx<{ id: string; hash: string; requestedBySession: string | null }[]>`
		update executions set
			status = ${d.decision},
			approved_at = case when ${d.decision} = 'approved' then now() else approved_at end,
			finished_at = case when ${d.decision} = 'denied' then now() else finished_at end,
			error = case when ${d.decision} = 'denied' then ${d.reason ? `denied by the operator: ${d.reason}` : 'denied by the operator'} else error end
		where id = ${id} and status = 'awaiting_approval' and (expires_at is null or expires_at > now())
		returning id, hash, requested_by_session as "requestedBySession"`;
	if (!rows.length) {
		const [cur] = await tx<{ status: ExecutionStatus; expired: boolean }[]>`
			select status, (expires_at is not null and expires_at <= now()) as expired from executions where id = ${id}`;
		if (!cur) return { ok: false, reason: 'not_found' };
		return { ok: false, reason: cur.status === 'awaiting_approval' && cur.expired ? 'expired' : 'already_decided', status: cur.status };
	}
	const e = rows[0];
	await tx`insert into approvals (execution_id, hash, decision, route, reason, decided_by, message_id)
		values (${id}, ${e.hash}, ${d.decision}, ${d.route}, ${d.reason ?? null}, ${d.operatorId}, ${d.messageId ?? null})`;
	await announce(tx, e, 'approval.decided', { decision: d.decision, route: d.route });
	if (d.decision === 'approved') await enqueueRun(tx, id);
	else await onTerminal(tx, id);
	return { ok: true, execution: (await getExecution(tx, id))! };
}

/** Atomically takes an approved execution for running; null when someone else has (or it is not approved). */
export async function claimExecution(sql: Sql, id: string, leaseSeconds: number): Promise<ExecutionRow | null> {
	return sql.begin<ExecutionRow | null>(async (tx) => {
		const rows = await tx`
			update executions set status = 'running', started_at = now(), lease_until = now() + make_interval(secs => ${leaseSeconds})
			where id = ${id} and status = 'approved' returning id`;
		if (!rows.length) return null;
		const e = (await getExecution(tx, id))!;
		await announce(tx, e);
		return e;
	});
}

export async function heartbeat(sql: Sql, id: string, leaseSeconds: number): Promise<boolean> {
	const rows = await sql`update executions set lease_until = now() + make_interval(secs => ${leaseSeconds}) where id = ${id} and status = 'running' returning id`;
	return rows.length > 0;
}

/** Replaces the step list of a running execution and emits `execution.step`. */
export async function saveSteps(sql: Sql, e: { id: string; requestedBySession: string | null }, steps: ExecutionStep[]): Promise<void> {
	await sql.begin(async (tx) => {
		await tx`update executions set steps = ${JSON.stringify(steps)}::text::jsonb where id = ${e.id} and status = 'running'`;
		await announce(tx, e, 'execution.step', { steps: steps.length });
	});
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
		const rows = await tx`
			update executions set status = ${r.status}, result = ${r.result}, error = ${r.error}, leftovers = ${r.leftovers ?? null},
				steps = ${JSON.stringify(r.steps)}::text::jsonb, finished_at = now(), lease_until = null
			where id = ${id} and status = 'running' returning id`;
		if (!rows.length) return false;
		if (r.refreshHost) await enqueueJob(tx, 'inventory__sync', { host: r.refreshHost }, { queueName: 'inventory' });
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
	await announce(tx, e, 'execution.updated', { terminal: e.status });
	const links = await tx<{ sessionId: string }[]>`select session_id as "sessionId" from execution_sessions where execution_id = ${id}`;
	for (const l of links) {
		await enqueueJob(tx, 'agent__continue_session', { sessionId: l.sessionId, executionId: id }, {
			jobKey: `continue:${id}:${l.sessionId}`,
			queueName: `session:${l.sessionId}`,
			maxAttempts: 3
		});
	}
}

/**
 * Marks running executions whose worker stopped heartbeating as interrupted (they may have
 * partly run; the continuation reads their target back), and expires stale approvals.
 */
export async function sweep(sql: Sql): Promise<{ lost: number; expired: number }> {
	return sql.begin(async (tx) => {
		const lost = await tx<{ id: string }[]>`
			update executions set status = 'interrupted',
				error = 'worker lost: the process running it stopped (no heartbeat for 60 s); it may have partly run',
				finished_at = now(), lease_until = null
			where status = 'running' and lease_until < now() returning id`;
		const expired = await tx<{ id: string }[]>`
			update executions set status = 'expired', error = 'approval expired: nobody decided in time', finished_at = now()
			where status = 'awaiting_approval' and expires_at <= now() returning id`;
		for (const r of [...lost, ...expired]) await onTerminal(tx, r.id);
		// Turns whose worker died mid-stream: mark the message so it does not show thinking dots forever.
		const orphaned = await tx<{ id: string; sessionId: string }[]>`
			update messages set status = 'error', error = 'interrupted: the process running this turn stopped',
				parts = parts || ${JSON.stringify([{ type: 'note', kind: 'error', text: 'This turn was interrupted: the process running it stopped. Send your message again to continue.' }])}::text::jsonb,
				rev = rev + 1, updated_at = now()
			where status = 'streaming' and updated_at < now() - interval '60 seconds'
			returning id, session_id as "sessionId"`;
		for (const m of orphaned) await emitEvent(tx, { sessionId: m.sessionId, type: 'message.updated', payload: { messageId: m.id } });
		return { lost: lost.length, expired: expired.length };
	});
}

/**
 * Executions the operator may approve by typing in this session: pending, not expired, and
 * requested in the agent's latest reply that requested any (its latest batch: a later "which one
 * do you mean?" keeps them in play; an older batch never is), limited to the ids the operator's
 * screen showed when the message was sent.
 */
export async function listAssentCandidates(tx: TransactionSql, sessionId: string, shownIds: string[]): Promise<AssentCandidate[]> {
	if (!shownIds.length) return [];
	return tx<AssentCandidate[]>`
		with latest as (
			select parts from messages
			where session_id = ${sessionId} and role = 'assistant'
				and parts @> '[{"type":"tool-call","toolName":"request_execution"}]'::jsonb
			order by seq desc limit 1
		), requested as (
			select p->'output'->>'executionId' as id from latest, jsonb_array_elements(latest.parts) p
			where p->>'type' = 'tool-call' and p->>'toolName' = 'request_execution'
		)
		select e.id, e.action, e.target, e.classification, e.params,
			(select name from entities n where n.kind = 'lxc' and 'lxc:' || n.external_id = e.target limit 1) as name
		from executions e
		where e.requested_by_session = ${sessionId} and e.status = 'awaiting_approval'
			and (e.expires_at is null or e.expires_at > now())
			and e.id::text in (select id from requested)
			and e.id = any(${shownIds}::uuid[])
		order by e.created_at`;
}

/** Records what a finished mutation left on its target, read back after the fact. */
export async function setLeftovers(tx: TransactionSql, id: string, leftovers: string): Promise<void> {
	await tx`update executions set leftovers = ${leftovers} where id = ${id} and leftovers is null`;
	await announce(tx, { id, requestedBySession: (await getExecution(tx, id))?.requestedBySession ?? null });
}

/** Asks for a running execution to be cancelled: marks it (the card says "cancelling…") and tells its runner. */
export async function requestCancel(tx: TransactionSql, id: string, by: string): Promise<'requested' | 'withdrawn' | { status: ExecutionStatus } | null> {
	const withdrawn = await tx`update executions set status = 'cancelled', error = 'cancelled by the operator before it started', finished_at = now()
		where id = ${id} and status = 'approved' returning id`;
	if (withdrawn.length) {
		await onTerminal(tx, id);
		return 'withdrawn';
	}
	// Read after the update (and lock the row): a worker may have claimed it in between.
	const [cur] = await tx<{ status: ExecutionStatus; sessionId: string | null }[]>`
		select status, requested_by_session as "sessionId" from executions where id = ${id} for update`;
	if (!cur) return null;
	if (cur.status !== 'running') return { status: cur.status };
	await tx`update executions set cancel_requested_at = coalesce(cancel_requested_at, now()) where id = ${id}`;
	await announce(tx, { id, requestedBySession: cur.sessionId });
	await emitEvent(tx, { sessionId: cur.sessionId, type: 'execution.cancel', payload: { executionId: id, by } });
	return 'requested';
}

/** Finished, not yet continued mutations of a session that touched their target and whose leftovers are unknown. */
export async function listUnreadLeftovers(sql: Sql, sessionId: string): Promise<ExecutionRow[]> {
	return sql<ExecutionRow[]>`
		select ${columns(sql)} from executions e
		join execution_sessions l on l.execution_id = e.id and l.session_id = ${sessionId} and l.continued_at is null
		where e.status in ('failed', 'cancelled', 'interrupted') and e.classification <> 'read_only'
			and jsonb_array_length(e.steps) > 0 and e.leftovers is null`;
}
