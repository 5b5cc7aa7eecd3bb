// Schedules (watches): what an admin sends to manage them. What Settings shows of them is the
// router's output (trpc/routers/schedules.ts ScheduleView), derived from the table.
import { z } from 'zod';
import { nextSlots, parseCron } from './cron';

/** A five-field cron expression in UTC that runs at least once (`0 0 31 2 *` never does). */
export const cronExpression = z
	.string()
	.trim()
	.max(120, 'cron: at most 120 characters')
	.superRefine((s, ctx) => {
		const p = parseCron(s);
		if (!p.ok) ctx.addIssue({ code: 'custom', message: `cron: ${p.error}` });
		else if (nextSlots(p.cron, new Date(), 1).length === 0) ctx.addIssue({ code: 'custom', message: 'cron: this expression never runs' });
	});

const scheduleFields = {
	name: z.string().trim().min(1, 'name: give the schedule a name').max(60, 'name: at most 60 characters'),
	cron: cronExpression,
	prompt: z.string().trim().min(1, 'prompt: say what to do').max(4000, 'prompt: at most 4,000 characters'),
	enabled: z.boolean()
};

export const createScheduleInput = z.object(scheduleFields);
export const updateScheduleInput = z.object({ id: z.string().uuid(), ...scheduleFields });
export const scheduleIdInput = z.object({ id: z.string().uuid() });
export const pauseScheduleInput = z.object({ id: z.string().uuid(), enabled: z.boolean() });
export type CreateScheduleInput = z.infer<typeof createScheduleInput>;
