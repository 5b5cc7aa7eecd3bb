import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { workerProcesses } from '../schema';

/** A worker process that has not beaten for this long is taken for dead. */
export const WORKER_DEAD_AFTER_S = 30;

/**
 * The first key of every process's life lock (`pg_advisory_lock(LIFE_LOCK_SPACE, lock_id)`), so
 * these locks never collide with other advisory locks (migrations use the one-key form).
 */
export const LIFE_LOCK_SPACE = 0x4e4d;

/** Whether the life lock `lockId` is held by some session of this database (a live process). */
const lifeHeld = (sql: Sql | TransactionSql, lockId: ReturnType<Sql['unsafe']>) => sql`exists (
	select 1 from pg_locks l
	where l.locktype = 'advisory' and l.granted and l.objsubid = 2
	  and l.database = (select oid from pg_database where datname = current_database())
	  and l.classid = ${LIFE_LOCK_SPACE}::int::oid and l.objid = ${lockId}::bigint::oid)`;

/**
 * Registers a worker process on `conn`, which must be a connection of its own (reserved) that the
 * process keeps for its whole life: the life lock is taken on it first, then the row is written,
 * so no row ever exists without its lock held. Returns the row id and the lock id.
 */
export async function registerWorkerProcess(conn: Sql, p: { hostname: string; pid: number; workerIds: string[] }): Promise<{ id: string; lockId: number }> {
	const [{ lockId }] = await conn<{ lockId: number }[]>`select nextval(pg_get_serial_sequence('worker_processes', 'lock_id'))::int as "lockId"`;
	await conn`select pg_advisory_lock(${LIFE_LOCK_SPACE}, ${lockId})`;
	const [row] = await conn<{ id: string }[]>`
		insert into worker_processes (hostname, pid, worker_ids, lock_id) values (${p.hostname}, ${p.pid}, ${p.workerIds}, ${lockId}) returning id`;
	return { id: row.id, lockId };
}

/** Adds graphile-worker ids to a registered process (its runners create workers after it registered). */
export async function addWorkerIds(sql: Sql, id: string, workerIds: string[]): Promise<void> {
	await sql`update worker_processes set worker_ids = (select array(select distinct unnest(worker_ids || ${workerIds}::text[]))) where id = ${id}`;
}

/** Whether this connection still holds the life lock (a dropped and re-opened connection does not). */
export async function holdsLifeLock(conn: Sql, lockId: number): Promise<boolean> {
	const [row] = await conn<{ held: boolean }[]>`
		select exists (select 1 from pg_locks where locktype = 'advisory' and granted and pid = pg_backend_pid()
			and classid = ${LIFE_LOCK_SPACE}::int::oid and objid = ${lockId}::bigint::oid and objsubid = 2) as held`;
	return row.held;
}

/**
 * Takes a live process's life lock again, on `conn` (a new reserved connection), after the one
 * that held it dropped. Waits while a recovery is claiming the process (its transaction holds the
 * lock), then keeps the lock only when the process's row is still there: nobody took it for
 * dead, so its work in flight is still its own and it goes on under the same id. False (the lock
 * let go again): another process recovered that work, so this one must stop doing it.
 */
export async function retakeLifeLock(conn: Sql, p: { id: string; lockId: number }): Promise<boolean> {
	await conn`select pg_advisory_lock(${LIFE_LOCK_SPACE}, ${p.lockId})`;
	const [row] = await conn`select 1 from worker_processes where id = ${p.id} and lock_id = ${p.lockId}`;
	if (row) return true;
	await conn`select pg_advisory_unlock(${LIFE_LOCK_SPACE}, ${p.lockId})`;
	return false;
}

export type DeadProcess = Pick<typeof workerProcesses.$inferSelect, 'id' | 'lockId' | 'hostname' | 'pid' | 'workerIds'>;

/** Registered processes whose life lock nobody holds: their connection closed, so they are gone. */
export async function listDeadProcesses(sql: Sql): Promise<DeadProcess[]> {
	return sql<DeadProcess[]>`
		select id, lock_id as "lockId", hostname, pid, worker_ids as "workerIds" from worker_processes w
		where not ${lifeHeld(sql, sql.unsafe('w.lock_id'))}`;
}

/**
 * Takes a dead process's row for recovery, in the caller's transaction: only one live process
 * gets it (the delete), and only while its life lock is free (the lock is tried for the
 * transaction, so the dead process cannot be mistaken for one that just registered).
 */
export async function claimDeadProcess(tx: TransactionSql, p: Pick<DeadProcess, 'id' | 'lockId'>): Promise<DeadProcess | null> {
	const [free] = await tx<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(${LIFE_LOCK_SPACE}, ${p.lockId}) as ok`;
	if (!free.ok) return null;
	const [row] = await tx<DeadProcess[]>`
		delete from worker_processes where id = ${p.id} and lock_id = ${p.lockId}
		returning id, lock_id as "lockId", hostname, pid, worker_ids as "workerIds"`;
	return row ?? null;
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

/** How many worker processes are alive: holding their life lock and beating (within WORKER_DEAD_AFTER_S). */
export async function countLiveWorkers(sql: Sql | TransactionSql): Promise<number> {
	const [row] = await sql<{ n: number }[]>`
		select count(*)::int as n from worker_processes w
		where beat_at > now() - make_interval(secs => ${WORKER_DEAD_AFTER_S}) and ${lifeHeld(sql, sql.unsafe('w.lock_id'))}`;
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
