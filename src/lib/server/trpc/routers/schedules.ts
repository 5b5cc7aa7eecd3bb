import { TRPCError } from '@trpc/server';
import { createScheduleInput, pauseScheduleInput, scheduleIdInput, updateScheduleInput, type ScheduleView } from '$lib/schemas/schedules';
import { sql } from '$lib/server/db/index';
import { listSchedules, type ScheduleListRow } from '$lib/server/db/queries/schedules';
import { createSchedule, editSchedule, pauseSchedule, removeSchedule } from '$lib/server/schedules/manage';
import { adminProcedure, router } from '../t';

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
const notFound = () => new TRPCError({ code: 'NOT_FOUND', message: 'No such schedule.' });

/** Schedules (recurring runs of a prompt): admins only; every change audited (schedules/manage.ts). */
export const schedulesRouter = router({
	list: adminProcedure.query(async () => (await listSchedules(sql())).map(view)),

	create: adminProcedure.input(createScheduleInput).mutation(({ input, ctx }) => sql().begin(async (tx) => view(await createSchedule(tx, ctx.user, input)))),

	update: adminProcedure.input(updateScheduleInput).mutation(({ input: { id, ...fields }, ctx }) =>
		sql().begin(async (tx) => {
			const s = await editSchedule(tx, ctx.user, id, fields);
			if (!s) throw notFound();
			return view(s);
		})
	),

	pause: adminProcedure.input(pauseScheduleInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			const s = await pauseSchedule(tx, ctx.user, input.id, input.enabled);
			if (!s) throw notFound();
			return view(s);
		})
	),

	remove: adminProcedure.input(scheduleIdInput).mutation(({ input, ctx }) =>
		sql().begin(async (tx) => {
			if (!(await removeSchedule(tx, ctx.user, input.id))) throw notFound();
			return { ok: true };
		})
	)
});
