import type { TransactionSql } from 'postgres';
import { graceMs, parseCron, slotAfter, slotAtOrAfter, type Cron } from '../../schemas/cron';
import { sql } from '../db/index';
import { insertRun, lockSchedule, setNextAt, setRunSession, type ScheduleRow } from '../db/queries/schedules';
import { createSession } from '../db/queries/sessions';
import { addSystemNote } from '../conversation/notes';
import { requestTurn } from '../conversation/turn-queue';
import { enqueueJob } from '../jobs/enqueue';
import type { JobPayload } from '../jobs/payloads';
import { logger } from '../log';

export const TICK_TASK = 'schedules__tick';

/** The `schedules__tick` job of one slot of one schedule (queued with `run_at` = the slot; schema in jobs/payloads.ts). */
export type TickPayload = JobPayload<'schedules__tick'>;

/** Missed slots recorded one by one after a long stop; beyond this many they are only counted in the log. */
const MISSED_ROWS = 100;

/**
 * Points a schedule at its next slot (at or after `from`) and queues that slot's tick, in the
 * caller's transaction; a paused schedule points nowhere. The job key names the schedule and the
 * slot, so two processes arming the same slot queue one job. A tick queued for an older slot (the
 * cron was edited, the schedule paused) finds `next_at` moved and does nothing.
 */
export async function armSchedule(tx: TransactionSql, s: Pick<ScheduleRow, 'id' | 'cron' | 'enabled'>, from = new Date()): Promise<Date | null> {
	const parsed = parseCron(s.cron);
	const slot = s.enabled && parsed.ok ? slotAtOrAfter(parsed.cron, from) : null;
	await setNextAt(tx, s.id, slot);
	if (slot)
		await enqueueJob(tx, TICK_TASK, { scheduleId: s.id, slot: slot.toISOString() } satisfies TickPayload, {
			jobKey: `schedule:${s.id}:${slot.toISOString()}`,
			runAt: slot,
			maxAttempts: 10
		});
	return slot;
}

export type TickResult = { outcome: 'stale' } | { outcome: 'done'; started: string[]; missed: number; next: string | null };

/**
 * Runs a schedule's due slot: exactly once, whichever worker and however often the job runs.
 * One transaction locks the schedule row, checks the job's slot is still the one it waits for,
 * inserts the unique (schedule, slot) run row with the run's session and turn, and queues the next
 * slot — so a worker killed in the middle leaves nothing (its transaction rolls back and the
 * job is taken again), and a job run again after its commit finds `next_at` moved on.
 * A slot reached late (the workers were down) still runs within its grace (half the interval, at
 * most an hour, see graceMs); older ones are recorded as missed.
 */
export async function tickSchedule(p: TickPayload, now: () => Date = () => new Date()): Promise<TickResult> {
	return sql().begin(async (tx) => {
		const s = await lockSchedule(tx, p.scheduleId);
		if (!s || !s.enabled || !s.nextAt || Date.parse(s.nextAt) !== Date.parse(p.slot)) return { outcome: 'stale' as const };
		const parsed = parseCron(s.cron);
		if (!parsed.ok) {
			logger('schedules').error({ schedule: s.id }, `schedule "${s.name}": its cron no longer parses (${parsed.error}); not armed again`);
			await setNextAt(tx, s.id, null);
			return { outcome: 'stale' as const };
		}
		const started: string[] = [];
		let missed = 0;
		let slot: Date | null = new Date(p.slot);
		// graphile-worker runs the job once the slot has come (by the database's clock): it is due even if this clock lags.
		const at = new Date(Math.max(now().getTime(), Date.parse(p.slot)));
		while (slot && slot.getTime() <= at.getTime()) {
			if (at.getTime() - slot.getTime() <= graceMs(parsed.cron, slot)) {
				const sessionId = await runSlot(tx, s, slot);
				if (sessionId) started.push(sessionId);
			} else {
				if (missed < MISSED_ROWS) await insertRun(tx, s.id, slot, 'missed');
				missed++;
			}
			let next = slotAfter(parsed.cron, slot);
			if (missed >= MISSED_ROWS && next && next.getTime() <= at.getTime()) next = lastDueSlot(parsed.cron, next, at);
			slot = next;
		}
		if (missed) logger('schedules').warn({ schedule: s.id, missed }, `schedule "${s.name}": ${missed} slot(s) missed while no worker ran`);
		const next = await armSchedule(tx, s, new Date(Math.max(at.getTime(), Date.parse(p.slot)) + 1));
		return { outcome: 'done' as const, started, missed, next: next?.toISOString() ?? null };
	});
}

/**
 * After many missed slots: the last slot at or before `at` (from `from`, or an hour back since an
 * older one is past its grace anyway), so a year down costs no year of steps.
 */
function lastDueSlot(c: Cron, from: Date, at: Date): Date {
	let last = from;
	for (let t = slotAtOrAfter(c, new Date(Math.max(from.getTime(), at.getTime() - 3_600_000))); t && t.getTime() <= at.getTime(); t = slotAfter(c, t)) last = t;
	return last;
}

/** One run: its unique row, a session of its own (started by the schedule), the prompt as a note and a turn. */
async function runSlot(tx: TransactionSql, s: ScheduleRow, slot: Date): Promise<string | null> {
	const runId = await insertRun(tx, s.id, slot, 'started');
	if (!runId) return null;
	const when = slot.toISOString().slice(0, 16).replace('T', ' ');
	const sessionId = await createSession(tx, null, `${s.name.slice(0, 40)} · ${when}`, { startedBySchedule: s.id });
	await setRunSession(tx, runId, sessionId);
	// The model reads the brief for this note, in every request of the chat (its prefix holds).
	await addSystemNote(
		tx,
		sessionId,
		'schedule',
		`The schedule "${s.name}" (${s.cron}, UTC) started this chat for ${when} UTC.`,
		{ scheduleId: s.id, scheduleName: s.name, slot: slot.toISOString() },
		scheduleBrief(s, slot)
	);
	await requestTurn(tx, { sessionId, origin: 'schedule' });
	return sessionId;
}

/** What the agent reads for a schedule's run: the admin's prompt, and what it may do on its own. */
export function scheduleBrief(s: Pick<ScheduleRow, 'name' | 'cron' | 'prompt'>, slot: Date): string {
	return [
		`The schedule "${s.name}" (${s.cron}, UTC) started this chat for ${slot.toISOString()}; no operator is here yet. An admin wrote its task:`,
		s.prompt,
		'Do it with read-only tools, then write what you found in a few lines. If a change is needed, propose a plan: it waits for an operator.'
	].join('\n');
}
