import type { TransactionSql } from 'postgres';

/** What an execution's error says when the process running it died. */
export const WORKER_LOST = 'worker lost: the Nomos process running it stopped; it may have partly run';

/**
 * Running executions whose process is gone — `runners` (dead processes, see recovery/dead-processes.ts),
 * or (`unowned`) a runner no longer registered — become `interrupted`; returns their ids. The
 * caller announces them and, once their remote command is stopped, queues their continuations.
 */
export async function interruptAbandoned(tx: TransactionSql, from: { runners: string[] } | { unowned: true }): Promise<string[]> {
	const rows = await tx<{ id: string }[]>`
		update executions e set status = 'interrupted', error = ${WORKER_LOST}, finished_at = now(), lease_until = null
		where status = 'running' and ${
			'runners' in from
				? tx`runner = any(${from.runners}::uuid[])`
				: tx`runner is not null and not exists (select 1 from worker_processes w where w.id = e.runner)`
		}
		returning id`;
	return rows.map((r) => r.id);
}

/**
 * Running executions of repeatable `actions` whose process is gone (`from` as interruptAbandoned;
 * `{ id, runner }`: one that its own, stopping, process gives up) go back to `approved` for a
 * live worker to resume (executions/resume.ts), with `why` and one more resume counted; returns
 * their ids. Not: one resumed `maxResumes` times already, one the operator asked to cancel, one
 * with a step that never reported its process group (its command may run on the host and could
 * not be stopped first). The caller queues their run jobs.
 */
export async function handOverForResume(
	tx: TransactionSql,
	from: { runners: string[] } | { unowned: true } | { id: string; runner: string | null },
	actions: readonly string[],
	maxResumes: number,
	why: string
): Promise<string[]> {
	const rows = await tx<{ id: string }[]>`
		update executions e set status = 'approved', runner = null, lease_until = null, resumes = resumes + 1, resumed_because = ${why}
		where status = 'running' and action = any(${actions as string[]}::text[]) and resumes < ${maxResumes} and cancel_requested_at is null
		  and not exists (select 1 from jsonb_array_elements(e.steps) s where s ? 'startedAt' and not s ? 'finishedAt' and not s ? 'pgid')
		  and ${
				'runners' in from
					? tx`runner = any(${from.runners}::uuid[])`
					: 'unowned' in from
						? tx`runner is not null and not exists (select 1 from worker_processes w where w.id = e.runner)`
						: tx`id = ${from.id} and runner is not distinct from ${from.runner}::uuid`
			}
		returning id`;
	return rows.map((r) => r.id);
}

/** A job of this key that graphile-worker will still run (or is running). */
const liveJob = (tx: TransactionSql, key: ReturnType<TransactionSql['unsafe']>) =>
	tx`exists (select 1 from graphile_worker._private_jobs j where j.key = ${key} and j.attempts < j.max_attempts)`;

/**
 * Work without a live job (see lifecycle.ts requeueStranded): running plans nothing moves on and
 * ended ones nobody told the agent about; approved executions with no run job
 * (approved over 10 s ago), finished executions of the last hour not continued for a linked
 * session with no continuation job (finished over 30 s ago, leaving recovery time to stop their
 * remote command first), sessions with operator messages queued over 10 s and no turn job.
 */
export async function listStranded(
	tx: TransactionSql
): Promise<{ approved: string[]; finished: string[]; queued: string[]; plans: string[]; unreported: Array<{ id: string; sessionId: string }> }> {
	const approved = await tx<{ id: string }[]>`
		select e.id from executions e
		where e.status = 'approved' and e.approved_at < now() - interval '10 seconds'
		  and not ${liveJob(tx, tx.unsafe(`'execution:' || e.id`))}`;
	const finished = await tx<{ id: string }[]>`
		select distinct e.id from executions e join execution_sessions l on l.execution_id = e.id
		where l.continued_at is null and e.plan_id is null
		  and e.status in ('succeeded', 'failed', 'cancelled', 'interrupted', 'denied', 'expired')
		  and coalesce(e.finished_at, e.approved_at, e.created_at) between now() - interval '1 hour' and now() - interval '30 seconds'
		  and not ${liveJob(tx, tx.unsafe(`'continue:' || e.id || ':' || l.session_id`))}`;
	const queued = await tx<{ sessionId: string }[]>`
		select distinct m.session_id as "sessionId" from messages m
		where m.role = 'user' and m.status = 'queued' and m.created_at < now() - interval '10 seconds'
		  and not exists (
			select 1 from graphile_worker._private_jobs j
			join graphile_worker._private_job_queues q on q.id = j.job_queue_id
			join graphile_worker._private_tasks t on t.id = j.task_id
			where q.queue_name = 'session:' || m.session_id and t.identifier = 'agent__run_turn' and j.attempts < j.max_attempts)`;
	// A running plan whose current step has ended (or that never started one) and nothing moves on.
	const plans = await tx<{ id: string }[]>`
		select p.id from plans p
		where p.status = 'approved' and p.decided_at < now() - interval '10 seconds'
		  and not exists (
			select 1 from jsonb_array_elements(p.steps) s join executions e on e.id = (s->>'executionId')::uuid
			where e.status in ('awaiting_approval', 'approved', 'running'))
		  and not ${liveJob(tx, tx.unsafe(`'plan:' || p.id`))}`;
	const unreported = await tx<{ id: string; sessionId: string }[]>`
		select p.id, p.session_id as "sessionId" from plans p
		where p.reported_at is null and p.status in ('succeeded', 'failed', 'cancelled', 'interrupted')
		  and p.finished_at between now() - interval '1 hour' and now() - interval '10 seconds'
		  and not ${liveJob(tx, tx.unsafe(`'continue-plan:' || p.id`))}`;
	return {
		approved: approved.map((r) => r.id),
		finished: finished.map((r) => r.id),
		queued: queued.map((r) => r.sessionId),
		plans: plans.map((r) => r.id),
		unreported
	};
}
