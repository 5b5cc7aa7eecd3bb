// The job queue's contract: every graphile-worker task Nomos runs, with its payload's schema. The
// producers' `enqueueJob` is typed by it (GraphileWorker.Tasks below) and checks the payload before
// adding the job; each task parses its payload with it first thing (`parseJobPayload`). Imported
// by tasks/ (outside Vite): relative imports only.
import { z } from 'zod';
import { messageOrigins } from '../../types/messages';
import { noticeKinds } from '../../schemas/notifications';
import { describeZodError } from '../../schemas/zod-error';

const id = z.string().min(1);

/** A payload cron adds (`_cron`) to, or that carries nothing: extra keys pass. */
const scheduled = z.looseObject({});

const notice = z.object({
	kind: z.enum(noticeKinds),
	sessionId: z.string().nullable(),
	/** The row that waits (execution, question or plan id): a retry checks it still waits. */
	subjectId: z.string().nullable(),
	title: z.string(),
	text: z.string(),
	/** Where the card is, relative to the app's origin. */
	path: z.string(),
	/** ISO 8601: when it started waiting. */
	at: z.string()
});

export const jobPayloads = {
	/** One agent turn (see conversation/turn-queue.ts). */
	agent__run_turn: z.object({
		sessionId: id,
		origin: z.enum(messageOrigins),
		/** Notes injected for this turn only (continuation results, question answers). */
		notes: z.array(z.string()).optional(),
		/**
		 * The id the turn's reply gets: a retried job finds its reply already made and leaves it to
		 * recovery instead of answering twice (absent in jobs queued before it existed).
		 */
		turnId: z.string().optional(),
		/** A streaming reply whose process stopped: this job resumes it (see recovery/dead-processes.ts). */
		resume: z.string().optional()
	}),
	/** Queued (in the same transaction) when an execution linked to a session finishes, or a plan of it ends. */
	agent__continue_session: z
		.object({ sessionId: id, executionId: id.optional(), planId: id.optional() })
		.refine((p) => p.executionId !== undefined || p.planId !== undefined, { message: 'executionId or planId is required', path: ['executionId'] }),
	/** Applies one stored alert delivery (watches/apply.ts); `receiveDelivery` adds it in the transaction that stored it. */
	alerts__intake: z.object({ deliveryId: id }),
	/** Runs one approved execution. */
	executions__run: z.object({ executionId: id }),
	/** Moves an approved plan on (after its approval and after each step ends). */
	plans__advance: z.object({ planId: id }),
	/** One notice for one webhook. */
	notify__webhook: z.object({ webhookId: id, notice }),
	/** One host, or (no host) every pinned host; cron adds `_cron`. */
	inventory__sync: z.looseObject({ host: z.string().min(1).optional() }),
	/** One slot of one schedule, queued with run_at = the slot (see schedules/tick.ts). */
	schedules__tick: z.object({ scheduleId: id, slot: z.iso.datetime({ offset: true }) }),
	/** A replay of a session (replay/run.ts): its turns one after another, nothing run. */
	replay__run: z.object({ replayId: id }),
	/** The agent's title for a session, once, after its first chat turn (sessions/title.ts). */
	sessions__title: z.object({ sessionId: id }),
	executions__sweep: scheduled,
	events__prune: scheduled,
	review__rebuild_facts: scheduled
} as const;

export type JobName = keyof typeof jobPayloads;
/** A job's payload as a producer writes it. */
export type JobPayload<T extends JobName> = z.input<(typeof jobPayloads)[T]>;

type JobPayloads = { [K in JobName]: JobPayload<K> };

declare global {
	// graphile-worker's own typing hook: its Task, TaskList and addJob types read payloads from here.
	// eslint-disable-next-line @typescript-eslint/no-namespace
	namespace GraphileWorker {
		// eslint-disable-next-line @typescript-eslint/no-empty-object-type
		interface Tasks extends JobPayloads {}
	}
}

export function isJobName(task: string): task is JobName {
	return Object.hasOwn(jobPayloads, task);
}

/**
 * The payload checked against its task's schema. Throws `<task>: invalid payload: <field>:
 * <problem>` when it does not fit: the job fails with that reason, which the Ops page shows.
 */
export function parseJobPayload<T extends JobName>(task: T, payload: unknown): z.output<(typeof jobPayloads)[T]> {
	const r = jobPayloads[task].safeParse(payload ?? {});
	if (!r.success) throw new Error(`${task}: invalid payload: ${describeZodError(r.error)}`);
	return r.data as z.output<(typeof jobPayloads)[T]>;
}
