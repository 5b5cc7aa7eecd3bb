import type { Sql } from '../index';

/** A worker process that has not beaten for this long is taken for dead. */
export const WORKER_DEAD_AFTER_S = 30;

/** Registers this process's graphile-worker workers; returns the row id to beat with. */
export async function registerWorkerProcess(sql: Sql, p: { hostname: string; pid: number; workerIds: string[] }): Promise<string> {
	const [row] = await sql<{ id: string }[]>`
		insert into worker_processes (hostname, pid, worker_ids) values (${p.hostname}, ${p.pid}, ${p.workerIds}) returning id`;
	return row.id;
}

/**
 * Proof of life: 'gone' when the row was removed (register again), 'revived' when the process
 * had been taken for dead (a long pause, a DB outage), else 'alive'.
 */
export async function beatWorkerProcess(sql: Sql, id: string): Promise<'alive' | 'revived' | 'gone'> {
	const [row] = await sql<{ revived: boolean }[]>`
		update worker_processes w set beat_at = now()
		from (select beat_at from worker_processes where id = ${id}) before
		where w.id = ${id}
		returning before.beat_at < now() - make_interval(secs => ${WORKER_DEAD_AFTER_S}) as revived`;
	if (!row) return 'gone';
	return row.revived ? 'revived' : 'alive';
}

export async function unregisterWorkerProcess(sql: Sql, id: string): Promise<void> {
	await sql`delete from worker_processes where id = ${id}`;
}

/** How many worker processes are alive (beat within WORKER_DEAD_AFTER_S). */
export async function countLiveWorkers(sql: Sql): Promise<number> {
	const [row] = await sql<{ n: number }[]>`
		select count(*)::int as n from worker_processes where beat_at > now() - make_interval(secs => ${WORKER_DEAD_AFTER_S})`;
	return row.n;
}

/**
 * Releases every graphile-worker lock (jobs and named queues such as `session:<id>`) held by a
 * worker id that no live process claims and that was taken more than WORKER_DEAD_AFTER_S ago:
 * its process died (kill -9, OOM, power). Without this a dead worker's queue stays locked for
 * about four hours and the session's turns wait behind it. Returns the worker ids released.
 */
export async function releaseDeadWorkerLocks(sql: Sql): Promise<string[]> {
	return sql.begin<string[]>(async (tx) => {
		const dead = await tx<{ id: string }[]>`
			with live as (
				select unnest(worker_ids) as id from worker_processes where beat_at > now() - make_interval(secs => ${WORKER_DEAD_AFTER_S})
			), held as (
				select locked_by as id from graphile_worker._private_jobs
				where locked_by is not null and locked_at < now() - make_interval(secs => ${WORKER_DEAD_AFTER_S})
				union
				select locked_by as id from graphile_worker._private_job_queues
				where locked_by is not null and locked_at < now() - make_interval(secs => ${WORKER_DEAD_AFTER_S})
			)
			select distinct id from held where id not in (select id from live)`;
		const ids = dead.map((d) => d.id);
		if (ids.length) await tx`select graphile_worker.force_unlock_workers(${ids}::text[])`;
		await tx`delete from worker_processes where beat_at < now() - interval '1 day'`;
		return ids;
	});
}
