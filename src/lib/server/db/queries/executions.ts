import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type {
	AssentCandidate,
	BeforeApproval,
	ExecutionEdit,
	ExecutionRow,
	ExecutionStatus,
	ExecutionStep,
	RequestCause,
	Verdict
} from '../../../types/executions';
import { emitEvent } from './events';
import type { executionSessions, executions } from '../schema';
import type { Expect, SameColumns } from '../same-type';
import type { EventPayload } from '../../../schemas/events';

/** The events that carry an execution's snapshot. */
type ExecutionEventType = 'execution.updated' | 'approval.decided' | 'execution.step';

export type { ExecutionRow };

// ExecutionRow (src/lib/types, what the browser gets) copies the table's columns: held to them.
type Execution = typeof executions.$inferSelect;
type _ExecutionRowColumns = Expect<SameColumns<ExecutionRow, Execution>>;

/** What a new execution row holds (a validated, prepared request). */
export type NewExecution = Pick<ExecutionRow, 'hostName' | 'target' | 'action' | 'params' | 'classification' | 'hash' | 'commandPreview' | 'reason'>;

const columns = (sql: Sql | TransactionSql) => sql`
	e.id, e.requested_by_session as "requestedBySession", e.plan_id as "planId", e.retry_of as "retryOf",
	(select t.name from chat_sessions s join api_tokens t on t.id = s.mcp_token_id where s.id = e.requested_by_session) as "mcpToken",
	e.host_name as "hostName", e.target, e.action, e.params, e.classification, e.hash,
	e.command_preview as "commandPreview", e.reason, e.status, e.steps, e.result, e.error,
	e.created_at as "createdAt", e.expires_at as "expiresAt", e.approved_at as "approvedAt",
	e.started_at as "startedAt", e.finished_at as "finishedAt",
	e.cancel_requested_at as "cancelRequestedAt", e.leftovers, e.edit, e.alert_resolved_at as "alertResolvedAt",
	e.resumes, e.resumed_because as "resumedBecause", e.cause, e.before_approval as "beforeApproval", e.verdict, e.verdict_detail as "verdictDetail",
	(select json_build_object('decision', a.decision, 'route', a.route, 'reason', a.reason,
		'decidedBy', (select username from operators o where o.id = a.decided_by),
		'decidedAt', to_char(a.decided_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
	 from approvals a where a.execution_id = e.id) as decision`;

export async function getExecution(sql: Sql | TransactionSql, id: string): Promise<ExecutionRow | null> {
	const [row] = await sql<ExecutionRow[]>`select ${columns(sql)} from executions e where e.id = ${id}`;
	return row ?? null;
}

/** A rollback already asked for this execution that is not over or that worked (pending, approved, running, succeeded). */
/**
 * A follow-up of execution `id` (a retry: the same action; a rollback: `pct_rollback`) that is
 * still waiting, running or already succeeded — one at a time; another may follow only if it
 * failed, was denied, cancelled or expired. Inside a transaction that holds `lockForFollowUp`,
 * the answer stays true until it commits (a double click, a second tab).
 */
export async function liveFollowUpOf(sql: Sql | TransactionSql, id: string, action: string): Promise<Pick<Execution, 'id' | 'status'> | null> {
	const [row] = await sql<Pick<Execution, 'id' | 'status'>[]>`
		select id, status from executions
		where retry_of = ${id} and action = ${action} and status in ('awaiting_approval', 'approved', 'running', 'succeeded')
		limit 1`;
	return row ?? null;
}

/** Locks execution `id` for the rest of the transaction, so follow-ups of it are asked for one at a time. */
export async function lockForFollowUp(tx: TransactionSql, id: string): Promise<boolean> {
	const rows = await tx`select 1 from executions where id = ${id} for update`;
	return rows.length > 0;
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

/** The latest `limit` executions, and every one still waiting for a decision or running however old (Ops counts them). */
export async function listRecentExecutions(sql: Sql, limit = 100): Promise<ExecutionRow[]> {
	return sql<ExecutionRow[]>`
		select ${columns(sql)} from executions e
		where e.status in ('awaiting_approval', 'approved', 'running')
			or e.id in (select id from executions order by created_at desc limit ${limit})
		order by e.created_at desc`;
}

/** Emits an execution event (`execution.updated` unless told otherwise) in the caller's transaction. */
export async function announceExecution<T extends ExecutionEventType = 'execution.updated'>(
	tx: TransactionSql,
	e: { id: string; requestedBySession: string | null },
	type: T = 'execution.updated' as T,
	extra: Omit<EventPayload<T>, 'executionId'> = {} as Omit<EventPayload<T>, 'executionId'>
): Promise<void> {
	await emitEvent(tx, { sessionId: e.requestedBySession, type, payload: { executionId: e.id, ...extra } as EventPayload<T> });
}

/** Records a new execution (and its link to the session) with its first status, and announces it. */
export async function insertExecution(
	tx: TransactionSql,
	p: NewExecution,
	opts: {
		sessionId: string | null;
		status: 'awaiting_approval' | 'approved';
		ttlHours: number;
		planId?: string | null;
		retryOf?: string | null;
		callKey?: string | null;
		tokenId?: string | null;
		cause?: RequestCause | null;
		beforeApproval?: BeforeApproval | null;
	}
): Promise<ExecutionRow> {
	const [row] = await tx<{ id: string }[]>`
		insert into executions (requested_by_session, plan_id, retry_of, requested_with_token, cause, host_name, target, action, params, classification,
			hash, command_preview, reason, status, expires_at, approved_at, call_key, before_approval)
		values (${opts.sessionId}, ${opts.planId ?? null}, ${opts.retryOf ?? null}, ${opts.tokenId ?? null}, ${opts.cause ? JSON.stringify(opts.cause) : null}::text::jsonb, ${p.hostName}, ${p.target}, ${p.action},
			${JSON.stringify(p.params)}::text::jsonb, ${p.classification}, ${p.hash}, ${p.commandPreview}, ${p.reason},
			${opts.status},
			${opts.status === 'awaiting_approval' ? tx`now() + make_interval(secs => ${opts.ttlHours * 3600})` : null},
			${opts.status === 'approved' ? tx`now()` : null},
			(select case when exists (select 1 from executions where call_key = ${opts.callKey ?? null}) then null else ${opts.callKey ?? null}::text end),
			${opts.beforeApproval ? JSON.stringify(opts.beforeApproval) : null}::text::jsonb)
		returning id`;
	if (opts.sessionId) {
		await tx`insert into execution_sessions (execution_id, session_id) values (${row.id}, ${opts.sessionId})`;
	}
	await announceExecution(tx, { id: row.id, requestedBySession: opts.sessionId }, 'execution.updated', { created: true });
	return (await getExecution(tx, row.id))!;
}

/** An execution's action and the API token it was requested with (what decides who may approve it). */
export async function requesterTokenOf(sql: Sql | TransactionSql, id: string): Promise<Pick<Execution, 'action' | 'requestedWithToken'> | null> {
	const [row] = await sql<Pick<Execution, 'action' | 'requestedWithToken'>[]>`
		select action, requested_with_token as "requestedWithToken" from executions where id = ${id}`;
	return row ?? null;
}

/** Why a pending execution can never be approved (the host's answer before approval), else null. */
export async function cannotRunWhy(sql: Sql | TransactionSql, id: string): Promise<string | null> {
	const [row] = await sql<{ why: string }[]>`
		select before_approval->>'why' as why from executions
		where id = ${id} and status = 'awaiting_approval' and before_approval->>'outcome' = 'cannot_run'`;
	return row?.why ?? null;
}

/** Names the session a read-only execution ran for (it is recorded without a session link). */
export async function setRequester(sql: Sql | TransactionSql, id: string, sessionId: string | null): Promise<void> {
	await sql`update executions set requested_by_session = ${sessionId} where id = ${id}`;
}

export type DecisionUpdate =
	| { ok: true; id: string; hash: string; requestedBySession: string | null }
	| { ok: false; reason: 'not_found' | 'already_decided' | 'expired'; status?: ExecutionStatus }
	/** The host said before approval that it cannot run (before_approval): it is never approved. */
	| { ok: false; reason: 'cannot_run'; why: string; status?: ExecutionStatus };

/**
 * Approves or denies one pending, unexpired execution with a single conditional update, so two
 * deciders racing each other produce exactly one decision. Says why when it did not apply.
 */
export async function setDecision(tx: TransactionSql, id: string, decision: 'approved' | 'denied', reason: string | null): Promise<DecisionUpdate> {
	const rows = await tx<Pick<Execution, 'id' | 'hash' | 'requestedBySession'>[]>`
		update executions set
			status = ${decision},
			approved_at = case when ${decision} = 'approved' then now() else approved_at end,
			finished_at = case when ${decision} = 'denied' then now() else finished_at end,
			error = case when ${decision} = 'denied' then ${reason ? `denied by the operator: ${reason}` : 'denied by the operator'} else error end
		where id = ${id} and status = 'awaiting_approval' and (expires_at is null or expires_at > now())
			and (${decision} = 'denied' or before_approval->>'outcome' is distinct from 'cannot_run')
		returning id, hash, requested_by_session as "requestedBySession"`;
	if (rows.length) return { ok: true, ...rows[0] };
	const [cur] = await tx<{ status: ExecutionStatus; expired: boolean; cannotRun: string | null }[]>`
		select status, (expires_at is not null and expires_at <= now()) as expired,
			case when before_approval->>'outcome' = 'cannot_run' then before_approval->>'why' end as "cannotRun"
		from executions where id = ${id}`;
	if (!cur) return { ok: false, reason: 'not_found' };
	if (cur.status === 'awaiting_approval' && !cur.expired && cur.cannotRun !== null)
		return { ok: false, reason: 'cannot_run', why: cur.cannotRun, status: cur.status };
	return { ok: false, reason: cur.status === 'awaiting_approval' && cur.expired ? 'expired' : 'already_decided', status: cur.status };
}

/**
 * Replaces a pending execution's params, hash and command with an operator's edited version,
 * only while it still waits, is unexpired and still has the hash the operator edited (so an
 * edit never lands on something other than what the operator saw); false when it did not apply.
 * The caller approves it in the same transaction.
 */
export async function applyEdit(
	tx: TransactionSql,
	id: string,
	baseHash: string,
	next: { params: Record<string, unknown>; hash: string; commandPreview: string; beforeApproval: BeforeApproval | null },
	edit: ExecutionEdit
): Promise<boolean> {
	const rows = await tx`
		update executions set params = ${JSON.stringify(next.params)}::text::jsonb, hash = ${next.hash},
			command_preview = ${next.commandPreview}, edit = ${JSON.stringify(edit)}::text::jsonb,
			before_approval = ${next.beforeApproval ? JSON.stringify(next.beforeApproval) : null}::text::jsonb
		where id = ${id} and status = 'awaiting_approval' and hash = ${baseHash} and edit is null
			and (expires_at is null or expires_at > now())
		returning id`;
	return rows.length > 0;
}

/** Atomically takes an approved execution for running; null when someone else has (or it is not approved). */
export async function claimExecution(sql: Sql, id: string, leaseSeconds: number, runner: string | null = null): Promise<ExecutionRow | null> {
	return sql.begin<ExecutionRow | null>(async (tx) => {
		const rows = await tx`
			update executions set status = 'running', started_at = now(), lease_until = now() + make_interval(secs => ${leaseSeconds}), runner = ${runner}
			where id = ${id} and status = 'approved' returning id`;
		if (!rows.length) return null;
		const e = (await getExecution(tx, id))!;
		await announceExecution(tx, e);
		return e;
	});
}

export async function heartbeat(sql: Sql, id: string, leaseSeconds: number): Promise<boolean> {
	const rows =
		await sql`update executions set lease_until = now() + make_interval(secs => ${leaseSeconds}) where id = ${id} and status = 'running' returning id`;
	return rows.length > 0;
}

/** Replaces the step list of a running execution and emits `execution.step`. */
export async function saveSteps(sql: Sql, e: { id: string; requestedBySession: string | null }, steps: ExecutionStep[]): Promise<void> {
	await sql.begin(async (tx) => {
		await tx`update executions set steps = ${JSON.stringify(steps)}::text::jsonb where id = ${e.id} and status = 'running'`;
		await announceExecution(tx, e, 'execution.step', { steps: steps.length });
	});
}

/** Moves a running execution to its terminal state (only from `running`); false when it was not running. */
export async function setFinished(
	tx: TransactionSql,
	id: string,
	r: {
		status: 'succeeded' | 'failed' | 'cancelled' | 'interrupted';
		result: string | null;
		error: string | null;
		steps: ExecutionStep[];
		leftovers?: string | null;
		verdict?: { verdict: Verdict; detail: string } | null;
	}
): Promise<boolean> {
	const rows = await tx`
		update executions set status = ${r.status}, result = ${r.result}, error = ${r.error}, leftovers = ${r.leftovers ?? null},
			verdict = ${r.verdict?.verdict ?? null}, verdict_detail = ${r.verdict?.detail ?? null},
			steps = ${JSON.stringify(r.steps)}::text::jsonb, finished_at = now(), lease_until = null
		where id = ${id} and status = 'running' returning id`;
	return rows.length > 0;
}

/**
 * A session's mutations whose read-back did not verify them (inconclusive or still failing), in
 * the order they finished: what the review lists so that "done" is never read into them.
 */
export async function listUnverifiedExecutions(
	sql: Sql | TransactionSql,
	sessionId: string
): Promise<Array<{ executionId: string; action: string; target: string; verdict: Verdict; detail: string | null; finishedAt: string | null }>> {
	return sql`
		select e.id as "executionId", e.action, e.target, e.verdict, e.verdict_detail as detail, e.finished_at as "finishedAt"
		from executions e
		where e.id in (select execution_id from execution_sessions where session_id = ${sessionId})
		  and e.verdict in ('inconclusive', 'still_failing')
		order by e.finished_at, e.id`;
}

/** The sessions an execution is linked to (whose agents hear of its outcome). */
export async function linkedSessions(tx: TransactionSql, executionId: string): Promise<string[]> {
	const rows = await tx<
		Pick<typeof executionSessions.$inferSelect, 'sessionId'>[]
	>`select session_id as "sessionId" from execution_sessions where execution_id = ${executionId}`;
	return rows.map((r) => r.sessionId);
}

/** Running executions whose worker stopped heartbeating become interrupted; returns their ids. */
export async function interruptLost(tx: TransactionSql): Promise<string[]> {
	const rows = await tx<{ id: string }[]>`
		update executions set status = 'interrupted',
			error = 'worker lost: the process running it stopped (no heartbeat for 60 s); it may have partly run',
			finished_at = now(), lease_until = null
		where status = 'running' and lease_until < now() returning id`;
	return rows.map((r) => r.id);
}

/** Approvals nobody decided in time become expired; returns their ids. */
export async function expireStale(tx: TransactionSql): Promise<string[]> {
	const rows = await tx<{ id: string }[]>`
		update executions set status = 'expired', error = 'approval expired: nobody decided in time', finished_at = now()
		where status = 'awaiting_approval' and expires_at <= now() returning id`;
	return rows.map((r) => r.id);
}

/**
 * Executions the operator may approve by typing in this session: pending, not expired, and
 * requested in the agent's latest reply that requested any (its latest batch: a later "which one
 * do you mean?" keeps them in play; an older batch never is), limited to the ids the operator's
 * screen showed when the message was sent.
 */
export async function listAssentCandidates(tx: TransactionSql, sessionId: string, shownIds: string[], requestedIds: string[]): Promise<AssentCandidate[]> {
	if (!shownIds.length || !requestedIds.length) return [];
	return tx<AssentCandidate[]>`
		select e.id, e.action, e.target, e.classification, e.params,
			(select name from entities n where n.kind = 'lxc' and 'lxc:' || n.external_id = e.target limit 1) as name
		from executions e
		where e.requested_by_session = ${sessionId} and e.status = 'awaiting_approval'
			and (e.expires_at is null or e.expires_at > now())
			and e.id = any(${requestedIds}::uuid[])
			and e.id = any(${shownIds}::uuid[])
		order by e.created_at`;
}

/** Records what a finished mutation left on its target, read back after the fact. */
export async function setLeftovers(tx: TransactionSql, id: string, leftovers: string): Promise<void> {
	await tx`update executions set leftovers = ${leftovers} where id = ${id} and leftovers is null`;
	await announceExecution(tx, { id, requestedBySession: (await getExecution(tx, id))?.requestedBySession ?? null });
}

/**
 * Cancels an approved execution no worker has taken yet; false when it is not (or no longer)
 * approved, or when it waits to be resumed (it ran before: see lifecycle.ts requestCancel).
 */
export async function withdrawApproved(tx: TransactionSql, id: string): Promise<boolean> {
	const rows = await tx`update executions set status = 'cancelled', error = 'cancelled by the operator before it started', finished_at = now()
		where id = ${id} and status = 'approved' and resumes = 0 returning id`;
	return rows.length > 0;
}

/** The execution's status, with its row locked for the rest of the transaction. */
export async function lockStatus(tx: TransactionSql, id: string): Promise<{ status: ExecutionStatus; sessionId: string | null } | null> {
	const [cur] = await tx<{ status: ExecutionStatus; sessionId: string | null }[]>`
		select status, requested_by_session as "sessionId" from executions where id = ${id} for update`;
	return cur ?? null;
}

/** Marks a running execution as asked to cancel (the card says "cancelling…"). */
export async function markCancelRequested(tx: TransactionSql, id: string): Promise<void> {
	await tx`update executions set cancel_requested_at = coalesce(cancel_requested_at, now()) where id = ${id}`;
}

/** Finished, not yet continued mutations of a session that touched their target and whose leftovers are unknown. */
export async function listUnreadLeftovers(sql: Sql, sessionId: string): Promise<ExecutionRow[]> {
	return sql<ExecutionRow[]>`
		select ${columns(sql)} from executions e
		join execution_sessions l on l.execution_id = e.id and l.session_id = ${sessionId} and l.continued_at is null
		where e.status in ('failed', 'cancelled', 'interrupted') and e.classification <> 'read_only'
			and e.leftovers is null
			-- a pre-run check the runner waited in (kind 'check') touched nothing
			and exists (select 1 from jsonb_array_elements(e.steps) s where coalesce(s->>'kind', '') <> 'check')`;
}

export type ContinuedExecution = Pick<
	ExecutionRow,
	| 'id'
	| 'action'
	| 'target'
	| 'params'
	| 'status'
	| 'result'
	| 'error'
	| 'hash'
	| 'hostName'
	| 'leftovers'
	| 'edit'
	| 'resumes'
	| 'resumedBecause'
	| 'verdict'
	| 'verdictDetail'
> & {
	/** Its outcome note is already in the session: claimed again for a late read-back (see `reopenContinuations`). */
	told: boolean;
};

/**
 * Claims every finished execution of the session not yet told to its agent (marks the link
 * continued), so two workers or a retried job never continue one twice. A plan's steps are told
 * by their plan's note (claimFinishedPlans), not one by one.
 */
export async function claimFinishedForSession(tx: TransactionSql, sessionId: string): Promise<ContinuedExecution[]> {
	return tx<ContinuedExecution[]>`
		update execution_sessions l set continued_at = now()
		from executions e
		where l.execution_id = e.id and l.session_id = ${sessionId} and l.continued_at is null and e.plan_id is null
		  and e.status in ('succeeded', 'failed', 'cancelled', 'interrupted', 'denied', 'expired')
		returning e.id, e.action, e.target, e.params, e.status, e.result, e.error, e.hash, e.host_name as "hostName", e.leftovers, e.edit,
			e.resumes, e.resumed_because as "resumedBecause",
			e.verdict, e.verdict_detail as "verdictDetail",
			exists (select 1 from messages m where m.session_id = l.session_id and m.role = 'system'
				and m.parts @> jsonb_build_array(jsonb_build_object('type', 'data-note',
					'data', jsonb_build_object('kind', 'execution', 'data', jsonb_build_object('executionId', e.id::text))))) as told`;
}

/**
 * Makes an execution's links continuable again (a late read-back found what its agent was not
 * told): the next continuation of each session claims it once more and runs the agent once.
 */
export async function reopenContinuations(tx: TransactionSql, executionId: string): Promise<void> {
	await tx`update execution_sessions set continued_at = null where execution_id = ${executionId}`;
}

/** The most times any of these hashes failed in the session in the last two hours. */
export async function maxRecentFailures(tx: TransactionSql, sessionId: string, hashes: string[]): Promise<number> {
	if (!hashes.length) return 0;
	const [row] = await tx<{ n: number }[]>`
		select count(*)::int as n from executions
		where requested_by_session = ${sessionId} and status = 'failed'
		  and hash = any(${hashes}::text[])
		  and created_at > now() - interval '2 hours'
		group by hash order by 1 desc limit 1`;
	return row?.n ?? 0;
}

/** Marks an execution's read-back to be done again (its host did not answer) in `afterSeconds`. */
export async function flagLeftoversRecheck(sql: Sql | TransactionSql, id: string, afterSeconds = 0): Promise<void> {
	await sql`update executions set leftovers_recheck_at = now() + make_interval(secs => ${afterSeconds}) where id = ${id}`;
}

/**
 * Takes up to `limit` executions whose re-check is due, moving each one's next try `holdSeconds`
 * ahead first, so another process's sweep leaves them alone while this one reads them back.
 */
export async function claimDueRechecks(sql: Sql, limit: number, holdSeconds: number): Promise<ExecutionRow[]> {
	return sql.begin<ExecutionRow[]>(async (tx) => {
		const rows = await tx<{ id: string }[]>`
			update executions set leftovers_recheck_at = now() + make_interval(secs => ${holdSeconds})
			where id in (
				select id from executions where leftovers_recheck_at <= now()
				order by leftovers_recheck_at limit ${limit} for update skip locked)
			returning id`;
		return rows.length ? tx<ExecutionRow[]>`select ${columns(tx)} from executions e where e.id = any(${rows.map((r) => r.id)}::uuid[])` : [];
	});
}

/**
 * Replaces what an execution left behind with a later read-back (unlike `setLeftovers`, which
 * keeps the first) and sets or clears its re-check (`recheckInSeconds` null: done); announces it.
 * Returns the leftovers it replaced.
 */
export async function replaceLeftovers(tx: TransactionSql, id: string, leftovers: string | null, recheckInSeconds: number | null): Promise<string | null> {
	const [before] = await tx<Pick<Execution, 'leftovers' | 'requestedBySession'>[]>`
		select leftovers, requested_by_session as "requestedBySession" from executions where id = ${id} for update`;
	if (!before) return null;
	await tx`
		update executions set leftovers = coalesce(${leftovers}, leftovers),
			leftovers_recheck_at = ${recheckInSeconds === null ? null : tx`now() + make_interval(secs => ${recheckInSeconds})`}
		where id = ${id}`;
	await announceExecution(tx, { id, requestedBySession: before.requestedBySession });
	return before.leftovers;
}

/**
 * The execution a tool call stored (its call key), as a resumed reply shows it; `cannotRun`: why
 * it cannot be approved, when its pre-check said so. Null: the call stored none.
 */
export async function executionByCallKey(
	sql: Sql | TransactionSql,
	key: string
): Promise<(Pick<Execution, 'id' | 'action' | 'target' | 'classification' | 'status'> & { command: string; cannotRun: string | null }) | null> {
	const [row] = await sql<(Pick<Execution, 'id' | 'action' | 'target' | 'classification' | 'status'> & { command: string; cannotRun: string | null })[]>`
		select id, action, target, classification, command_preview as command, status,
			case when status = 'awaiting_approval' and before_approval->>'outcome' = 'cannot_run' then before_approval->>'why' end as "cannotRun"
		from executions where call_key = ${key}`;
	return row ?? null;
}

/** An execution's plan, if it is a plan's step. */
export async function executionPlanId(sql: Sql | TransactionSql, id: string): Promise<string | null> {
	const [row] = await sql<Pick<Execution, 'planId'>[]>`select plan_id as "planId" from executions where id = ${id}`;
	return row?.planId ?? null;
}
