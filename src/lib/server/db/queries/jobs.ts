import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { GaveUpGroup, JobsChange } from '../../../schemas/jobs';
import { emitEvent } from './events';

export type { GaveUpGroup };

/** The event that tells pages the list of jobs that gave up changed (a doorbell; the table is the truth). */
export const JOBS_CHANGED = 'jobs.changed';

/**
 * Jobs the Ops page may run again by hand: each repeats harmless work (a read, a prune, a
 * rebuild, a sweep, one more notice). The rest (turns, continuations, executions) are left to
 * their own recovery; a hand retry could run an effect twice.
 */
export const RETRYABLE_TASKS: readonly string[] = ['inventory__sync', 'events__prune', 'review__rebuild_facts', 'executions__sweep', 'notify__webhook'];

/**
 * When graphile-worker recorded job `j`'s failure: it stores none, but a failure moves `run_at`
 * to `greatest(now(), run_at) + exp(least(attempts, 10))` seconds, and a job is only taken when
 * its `run_at` has passed, so this is exact. closeAbandonedJobs moves `run_at` the same way.
 */
const failedAt = (sql: Sql) => sql`j.run_at - make_interval(secs => exp(least(j.attempts, 10)))`;

/**
 * A copy that `add_job` superseded while it ran (see closeAbandonedJobs): no key, attempts used
 * up, and `updated_at` moved (taking a job, failing it and unlocking it never touch `updated_at`).
 */
const superseded = (sql: Sql | TransactionSql) => sql`(key is null and attempts >= max_attempts and updated_at > created_at)`;

/**
 * Accounts for the jobs of workers that died, once their locks were released (today
 * releaseDeadWorkerLocks; the caller runs this right after it). graphile-worker counts an
 * attempt when a job is taken and records nothing when its process dies, so such a job is
 * unlocked with an attempt spent and no `last_error`:
 * - a copy that a newer one superseded while it ran is deleted: `add_job` with the same job
 *   key (the minute's cron, a start's first sync, a sweep queuing the next one) took its key
 *   and set its attempts to max_attempts, meaning "do not retry, the new copy does this work";
 *   lost with its worker it would sit at 25/25 forever (the soak's seven `inventory__sync`);
 * - any other gets `last_error` "its worker process died…" and a backoff, as a failure would;
 *   if that was its last attempt it has given up and says why (and `jobs.changed` is emitted).
 * A superseded copy is recognised by what the supersede leaves: no key, attempts used up, and
 * `updated_at` moved (taking a job, failing it and unlocking it never touch `updated_at`).
 */
export async function closeAbandonedJobs(sql: Sql): Promise<{ removed: number; explained: number; gaveUp: string[] }> {
	return sql.begin(async (tx) => {
		const rows = await tx<{ id: string; task: string; removed: boolean; gaveUp: boolean }[]>`
			with abandoned as (
				select id, ${superseded(tx)} as superseded
				from graphile_worker._private_jobs
				where locked_at is null and last_error is null and attempts > 0
				for update skip locked
			), removed as (
				delete from graphile_worker._private_jobs j using abandoned a
				where j.id = a.id and a.superseded
				returning j.id, j.task_id, true as removed, false as gave_up
			), explained as (
				update graphile_worker._private_jobs j
				set last_error = format('its worker process died while running it (attempt %s of %s)', j.attempts, j.max_attempts),
					run_at = greatest(now(), j.run_at) + make_interval(secs => exp(least(j.attempts, 10)))
				from abandoned a
				where j.id = a.id and not a.superseded
				returning j.id, j.task_id, false as removed, j.attempts >= j.max_attempts as gave_up
			)
			select c.id::text as id, t.identifier as task, c.removed, c.gave_up as "gaveUp"
			from (select * from removed union all select * from explained) c
			join graphile_worker._private_tasks t on t.id = c.task_id`;
		const gaveUp = [...new Set(rows.filter((r) => r.gaveUp).map((r) => r.task))];
		if (gaveUp.length) await emitJobsChanged(tx, { change: 'gave_up', tasks: gaveUp });
		return { removed: rows.filter((r) => r.removed).length, explained: rows.filter((r) => !r.removed).length, gaveUp };
	});
}

/**
 * After graphile-worker failed a job (its `job:error` event, which comes before the failure is
 * written): waits, briefly, until the failure is recorded, and if the job has no attempts left
 * emits `jobs.changed`, so a page that re-reads then sees it. Also catches a copy superseded while
 * it ran, whose attempts the database used up although the worker's copy of the row says not.
 */
export async function announceIfGaveUp(sql: Sql, jobId: string, task: string, opts: { waitMs?: number } = {}): Promise<boolean> {
	const until = Date.now() + (opts.waitMs ?? 5000);
	for (;;) {
		const [row] = await sql<{ settled: boolean; gaveUp: boolean }[]>`
			select locked_at is null as settled, attempts >= max_attempts as "gaveUp" from graphile_worker._private_jobs where id = ${jobId}`;
		// Gone: completed or dismissed meanwhile. Still locked past the wait: its pool lost the write.
		if (!row || (!row.settled && Date.now() > until)) return false;
		if (row.settled) {
			if (!row.gaveUp) return false;
			await sql.begin((tx) => emitJobsChanged(tx, { change: 'gave_up', tasks: [task] }));
			return true;
		}
		await new Promise((r) => setTimeout(r, 20));
	}
}

export async function emitJobsChanged(tx: TransactionSql, change: JobsChange): Promise<void> {
	await emitEvent(tx, { type: JOBS_CHANGED, payload: change });
}

/**
 * Jobs that gave up (attempts used up, not running), by task: how many, when the latest gave
 * up and why (its `last_error`, with URLs cut to their origin and credentials masked: the list
 * reaches the public /readyz). `upToId` is the newest one's id, so an action on the group
 * leaves alone what gives up after the operator looked.
 */
export async function listGaveUpJobs(sql: Sql): Promise<GaveUpGroup[]> {
	const rows = await sql<(Omit<GaveUpGroup, 'retryable'> & { reason: string | null })[]>`
		select t.identifier as task, count(*)::int as count, max(${failedAt(sql)}) as "lastAt",
			(array_agg(j.last_error order by ${failedAt(sql)} desc, j.id desc))[1] as reason,
			max(j.id)::text as "upToId"
		from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
		where j.attempts >= j.max_attempts and j.locked_at is null
		group by t.identifier
		order by max(${failedAt(sql)}) desc, t.identifier`;
	return rows.map((r) => ({ ...r, reason: r.reason === null ? null : maskReason(r.reason), retryable: RETRYABLE_TASKS.includes(r.task) }));
}

/** Deletes a task's jobs that gave up, up to `upToId` (those the operator saw); returns how many. */
export async function dismissGaveUpJobs(tx: TransactionSql, task: string, upToId: string): Promise<number> {
	const rows = await tx`
		delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
		where t.id = j.task_id and t.identifier = ${task} and j.id <= ${upToId}::bigint
			and j.attempts >= j.max_attempts and j.locked_at is null
		returning j.id`;
	return rows.length;
}

/**
 * Gives a task's jobs that gave up (up to `upToId`) their attempts back and makes them due now;
 * workers are woken as add_job wakes them. `updated_at` is left alone (see closeAbandonedJobs).
 */
export async function retryGaveUpJobs(tx: TransactionSql, task: string, upToId: string): Promise<number> {
	const rows = await tx`
		update graphile_worker._private_jobs j set attempts = 0, last_error = null, run_at = now()
		from graphile_worker._private_tasks t
		where t.id = j.task_id and t.identifier = ${task} and j.id <= ${upToId}::bigint
			and j.attempts >= j.max_attempts and j.locked_at is null
		returning j.id`;
	if (rows.length) await tx`select pg_notify('jobs:insert', ${JSON.stringify({ count: rows.length })})`;
	return rows.length;
}

const AUTH_SCHEME = /\b(bearer|basic)\s+[^\s,;'"()]+/gi;
const SECRET_WORDS = /\b(token|secret|password|passwd|api[_-]?key|authorization)(\s*[:=]\s*)(?!(?:bearer|basic)\b|•••)[^\s,;'"()]+/gi;
const URL_IN_TEXT = /\b([a-z][a-z0-9+.-]*):\/\/(?:[^\s/?#@'"<>]*@)?([^\s/?#'"<>]+)([^\s'"<>]*)/gi;

/**
 * A failure's text as pages and the probe show it: a URL keeps its scheme and host (which
 * endpoint), never its credentials, path or query (a webhook's secret lives there); the value
 * after a word like `token` or `Bearer` is masked; at most 300 characters.
 */
export function maskReason(text: string): string {
	const masked = text
		.replace(URL_IN_TEXT, (_m, scheme: string, host: string, rest: string) => {
			// Punctuation after a URL belongs to the sentence: "POST https://h/x: 500".
			const tail = /[.,:;!?)\]]*$/.exec(host + rest)![0];
			const bare = (host + rest).slice(0, host.length + rest.length - tail.length);
			return `${scheme}://${bare.slice(0, host.length)}${bare.length > host.length ? '/…' : ''}${tail}`;
		})
		.replace(AUTH_SCHEME, '$1 •••')
		.replace(SECRET_WORDS, '$1$2•••');
	return masked.length > 300 ? `${masked.slice(0, 299)}…` : masked;
}

/**
 * Releases every job and queue lock held by these graphile-worker ids (a dead process's), in the
 * caller's transaction: jobs with attempts left run again, those without get `why` as their
 * error — except copies a newer one superseded while they ran, which closeAbandonedJobs removes
 * next (marked, they would stay listed as "gave up" although their successor does the work: the
 * chaos bench's two `inventory__sync`); live workers are woken at once instead of at their next poll.
 */
export async function releaseJobsOf(tx: TransactionSql, workerIds: string[], why: string): Promise<void> {
	await tx`update graphile_worker._private_jobs set last_error = ${why}
		where locked_by = any(${workerIds}::text[]) and attempts >= max_attempts and not ${superseded(tx)}`;
	await tx`select graphile_worker.force_unlock_workers(${workerIds}::text[])`;
	await tx`select pg_notify('jobs:insert', ${JSON.stringify({ count: workerIds.length })})`;
}
