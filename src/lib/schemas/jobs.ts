import { z } from 'zod';

/** A task's background jobs that used up their attempts, as the Ops page and /readyz show them. */
export type GaveUpGroup = {
	task: string;
	count: number;
	/** ISO 8601: when the latest of them gave up. */
	lastAt: string;
	/** The latest one's last error, masked (see maskReason); null when none was recorded. */
	reason: string | null;
	/** The newest one's id: an action on the group stops there. */
	upToId: string;
	/** Whether the Ops page offers to run them again (see RETRYABLE_TASKS). */
	retryable: boolean;
};

/** The payload of a `jobs.changed` event. */
export type JobsChange = { change: 'gave_up' | 'dismissed' | 'retried'; tasks: string[] };

/** One group of jobs that gave up, as the Ops page's Retry and Dismiss buttons name it. */
export const gaveUpGroupInput = z.object({
	task: z
		.string()
		.regex(/^[a-z][a-z0-9_]*__[a-z0-9_]+$/, 'a task name like inventory__sync')
		.max(64),
	upToId: z.string().regex(/^[1-9][0-9]{0,18}$/, 'a job id')
});
