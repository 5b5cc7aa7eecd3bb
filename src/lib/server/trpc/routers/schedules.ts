import { createScheduleInput, pauseScheduleInput, scheduleIdInput, updateScheduleInput } from '$lib/schemas/schedules';
import { sql } from '$lib/server/db/index';
import { listSchedules, type ScheduleListRow, type ScheduleRow } from '$lib/server/db/queries/schedules';
import { changeSchedule, createSchedule, editSchedule, pauseSchedule, removeSchedule } from '$lib/server/schedules/manage';
import { adminProcedure, router } from '../t';

/** A schedule as Settings lists it: its row's fields (`nextAt`: the slot its queued run is for, null while paused), its counts and last run. */
export type ScheduleView = Pick<ScheduleRow, 'id' | 'name' | 'cron' | 'prompt' | 'enabled' | 'nextAt'> & {
	lastRun: { slot: string; outcome: NonNullable<ScheduleListRow['lastOutcome']>; sessionId: string | null } | null;
	runs: number;
	missed: number;
};

const view = (s: Omit<ScheduleListRow, 'runs' | 'missed' | 'lastSlot' | 'lastOutcome' | 'lastSessionId'> & Partial<ScheduleListRow>): ScheduleView => ({
	id: s.id,
	name: s.name,
	cron: s.cron,
	prompt: s.prompt,
	enabled: s.enabled,
	nextAt: s.nextAt,
	lastRun: s.lastSlot && s.lastOutcome ? { slot: s.lastSlot, outcome: s.lastOutcome, sessionId: s.lastSessionId ?? null } : null,
	runs: s.runs ?? 0,
	missed: s.missed ?? 0
});

/** Schedules (recurring runs of a prompt): admins only; every change audited (schedules/manage.ts). */
export const schedulesRouter = router({
	list: adminProcedure.query(async () => (await listSchedules(sql())).map(view)),

	create: adminProcedure.input(createScheduleInput).mutation(({ input, ctx }) => changeSchedule((tx) => createSchedule(tx, ctx.user, input)).then(view)),

	update: adminProcedure
		.input(updateScheduleInput)
		.mutation(({ input: { id, ...fields }, ctx }) => changeSchedule((tx) => editSchedule(tx, ctx.user, id, fields)).then(view)),

	pause: adminProcedure
		.input(pauseScheduleInput)
		.mutation(({ input, ctx }) => changeSchedule((tx) => pauseSchedule(tx, ctx.user, input.id, input.enabled)).then(view)),

	remove: adminProcedure
		.input(scheduleIdInput)
		.mutation(({ input, ctx }) => changeSchedule((tx) => removeSchedule(tx, ctx.user, input.id)).then(() => ({ ok: true })))
});
