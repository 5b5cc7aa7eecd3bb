import type { TransactionSql } from 'postgres';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { Refusal } from '../refusal';
import { deleteSchedule, insertSchedule, lockSchedule, setScheduleEnabled, updateSchedule, type ScheduleRow } from '../db/queries/schedules';
import type { CreateScheduleInput } from '../../schemas/schedules';
import { armSchedule } from './tick';

type Actor = { id: string; username?: string };

const detailOf = (s: ScheduleRow) => ({ name: s.name, cron: s.cron, enabled: s.enabled });

/** Creates a schedule and queues its first slot (when enabled); audited in the same transaction. */
export async function createSchedule(tx: TransactionSql, actor: Actor, input: CreateScheduleInput): Promise<ScheduleRow> {
	const s = await insertSchedule(tx, { ...input, createdBy: actor.id });
	const next = await armSchedule(tx, s);
	await recordAudit(tx, {
		actor,
		action: 'schedule.created',
		route: 'settings',
		subjectType: 'schedule',
		subjectId: s.id,
		detail: { ...detailOf(s), prompt: s.prompt }
	});
	return { ...s, nextAt: next?.toISOString() ?? null };
}

/**
 * Edits a schedule (name, cron, prompt, enabled); its next slot is worked out again. The audit entry
 * keeps what changed. This and the ones below return null (false) for no such (or a deleted) schedule.
 */
export async function editSchedule(tx: TransactionSql, actor: Actor, id: string, input: CreateScheduleInput): Promise<ScheduleRow | null> {
	const before = await lockSchedule(tx, id);
	if (!before) return null;
	const s = (await updateSchedule(tx, id, input))!;
	const next = await armSchedule(tx, s);
	const changed = Object.fromEntries(
		(['name', 'cron', 'prompt', 'enabled'] as const).filter((k) => before[k] !== s[k]).map((k) => [k, { from: before[k], to: s[k] }])
	);
	await recordAudit(tx, { actor, action: 'schedule.edited', route: 'settings', subjectType: 'schedule', subjectId: s.id, detail: { name: s.name, changed } });
	return { ...s, nextAt: next?.toISOString() ?? null };
}

/** Pauses (no slot queued) or resumes (the next slot from now; slots passed meanwhile are not run). */
export async function pauseSchedule(tx: TransactionSql, actor: Actor, id: string, enabled: boolean): Promise<ScheduleRow | null> {
	if (!(await lockSchedule(tx, id))) return null;
	const s = (await setScheduleEnabled(tx, id, enabled))!;
	const next = await armSchedule(tx, s);
	await recordAudit(tx, {
		actor,
		action: enabled ? 'schedule.resumed' : 'schedule.paused',
		route: 'settings',
		subjectType: 'schedule',
		subjectId: s.id,
		detail: detailOf(s)
	});
	return { ...s, nextAt: next?.toISOString() ?? null };
}

/** Deletes a schedule: it never runs again; the chats it opened stay. */
export async function removeSchedule(tx: TransactionSql, actor: Actor, id: string): Promise<boolean> {
	if (!(await lockSchedule(tx, id))) return false;
	const s = (await deleteSchedule(tx, id))!;
	await recordAudit(tx, {
		actor,
		action: 'schedule.deleted',
		route: 'settings',
		subjectType: 'schedule',
		subjectId: s.id,
		detail: { name: s.name, cron: s.cron }
	});
	return true;
}

/**
 * Runs one of the changes above in its own transaction, as Settings asks for it: a schedule that
 * is not there (deleted meanwhile) is refused as NOT_FOUND and nothing stays written.
 */
export function changeSchedule<T>(change: (tx: TransactionSql) => Promise<T | null | false>): Promise<T> {
	return sql().begin(async (tx) => {
		const done = await change(tx);
		if (done === null || done === false) throw new Refusal('NOT_FOUND', 'No such schedule.');
		return done;
	}) as Promise<T>;
}
