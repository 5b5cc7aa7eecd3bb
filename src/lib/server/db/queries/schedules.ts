import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { scheduleRuns, schedules } from '../schema';

type Schedule = typeof schedules.$inferSelect;
type ScheduleRun = typeof scheduleRuns.$inferSelect;

/** A schedule as the queries return it (not who made it). `nextAt`: the slot its queued tick is for; null while paused or deleted. */
export type ScheduleRow = Omit<Schedule, 'createdBy'>;

/** A schedule with its run counts and its last run (null fields: it has not run). */
export type ScheduleListRow = ScheduleRow & {
	runs: number;
	missed: number;
	lastSlot: ScheduleRun['slot'] | null;
	lastOutcome: ScheduleRun['outcome'] | null;
	lastSessionId: ScheduleRun['sessionId'];
};

const COLUMNS = (sql: Sql | TransactionSql) =>
	sql`s.id, s.name, s.cron, s.prompt, s.enabled, s.next_at as "nextAt", s.deleted_at as "deletedAt", s.created_at as "createdAt", s.updated_at as "updatedAt"`;

/** Schedules not deleted, oldest first, with their run counts and last slot. */
export async function listSchedules(sql: Sql | TransactionSql): Promise<ScheduleListRow[]> {
	return sql<ScheduleListRow[]>`
		select ${COLUMNS(sql)},
			(select count(*)::int from schedule_runs r where r.schedule_id = s.id and r.outcome = 'started') as runs,
			(select count(*)::int from schedule_runs r where r.schedule_id = s.id and r.outcome = 'missed') as missed,
			l.slot as "lastSlot", l.outcome as "lastOutcome", l.session_id as "lastSessionId"
		from schedules s
		left join lateral (select slot, outcome, session_id from schedule_runs r where r.schedule_id = s.id order by slot desc limit 1) l on true
		where s.deleted_at is null order by s.created_at`;
}

export async function insertSchedule(
	tx: TransactionSql,
	s: Pick<Schedule, 'name' | 'cron' | 'prompt' | 'enabled'> & { createdBy: string }
): Promise<ScheduleRow> {
	const [row] = await tx<ScheduleRow[]>`
		insert into schedules as s (name, cron, prompt, enabled, created_by) values (${s.name}, ${s.cron}, ${s.prompt}, ${s.enabled}, ${s.createdBy})
		returning ${COLUMNS(tx)}`;
	return row;
}

/** Locks a live (not deleted) schedule for the caller's transaction; null when there is none. */
export async function lockSchedule(tx: TransactionSql, id: string): Promise<ScheduleRow | null> {
	const [row] = await tx<ScheduleRow[]>`select ${COLUMNS(tx)} from schedules s where s.id = ${id} and s.deleted_at is null for update`;
	return row ?? null;
}

export async function updateSchedule(tx: TransactionSql, id: string, s: Pick<Schedule, 'name' | 'cron' | 'prompt' | 'enabled'>): Promise<ScheduleRow | null> {
	const [row] = await tx<ScheduleRow[]>`
		update schedules s set name = ${s.name}, cron = ${s.cron}, prompt = ${s.prompt}, enabled = ${s.enabled}, updated_at = now()
		where s.id = ${id} and s.deleted_at is null returning ${COLUMNS(tx)}`;
	return row ?? null;
}

export async function setScheduleEnabled(tx: TransactionSql, id: string, enabled: boolean): Promise<ScheduleRow | null> {
	const [row] = await tx<ScheduleRow[]>`
		update schedules s set enabled = ${enabled}, updated_at = now() where s.id = ${id} and s.deleted_at is null returning ${COLUMNS(tx)}`;
	return row ?? null;
}

/** Deletes a schedule: the row stays (its runs and sessions still name it), it never runs again. */
export async function deleteSchedule(tx: TransactionSql, id: string): Promise<ScheduleRow | null> {
	const [row] = await tx<ScheduleRow[]>`
		update schedules s set deleted_at = now(), enabled = false, next_at = null, updated_at = now()
		where s.id = ${id} and s.deleted_at is null returning ${COLUMNS(tx)}`;
	return row ?? null;
}

export async function setNextAt(tx: TransactionSql, id: string, nextAt: Date | null): Promise<void> {
	await tx`update schedules set next_at = ${nextAt ? nextAt.toISOString() : null}::timestamptz where id = ${id}`;
}

/**
 * Records one slot of a schedule; false when that slot already has its row (another worker, or a
 * retried job, got there first — or holds it in a transaction not yet ended, which this waits for).
 */
export async function insertRun(tx: TransactionSql, scheduleId: string, slot: Date, outcome: ScheduleRun['outcome']): Promise<string | null> {
	const [row] = await tx<{ id: string }[]>`
		insert into schedule_runs (schedule_id, slot, outcome) values (${scheduleId}, ${slot.toISOString()}::timestamptz, ${outcome})
		on conflict (schedule_id, slot) do nothing returning id`;
	return row?.id ?? null;
}

export async function setRunSession(tx: TransactionSql, runId: string, sessionId: string): Promise<void> {
	await tx`update schedule_runs set session_id = ${sessionId} where id = ${runId}`;
}

/** The schedule behind a run's session (its name), or null. */
export async function scheduleOfSession(sql: Sql | TransactionSql, sessionId: string): Promise<Pick<Schedule, 'id' | 'name'> | null> {
	const [row] = await sql<Pick<Schedule, 'id' | 'name'>[]>`
		select sc.id, sc.name from chat_sessions s join schedules sc on sc.id = s.started_by_schedule where s.id = ${sessionId}`;
	return row ?? null;
}
