import type { Sql } from '../db/index';
import type { TransactionSql } from 'postgres';
import { isJobName, parseJobPayload } from './payloads';

/**
 * Which free worker slot goes to which job (graphile-worker runs the lowest number first).
 * Someone is waiting for a turn (a reply, a continuation after a result) and for an approved
 * execution; nobody waits for a sync or a sweep, so those take what is left.
 */
export const PRIORITY = {
	/** The operator is reading: a turn or a continuation. */
	reply: -10,
	/** An approved execution: the operator watches its card. */
	execution: -5,
	/** Housekeeping: inventory syncs, sweeps, pruning. */
	background: 10
} as const;

export interface EnqueueOptions {
	jobKey?: string;
	priority?: number;
	queueName?: string;
	maxAttempts?: number;
	runAt?: Date;
}

let workerSchema: Promise<unknown> = Promise.resolve();

/**
 * A web process serves its first requests while graphile-worker's schema is still being checked
 * (boot); jobs are added once that check has passed, and fail with its error if it did not.
 */
export function gateJobsOn(schemaChecked: Promise<unknown>): void {
	workerSchema = schemaChecked;
}

/** Resolves once jobs may be added (for a producer that adds its job in its own SQL, as the alert intake does). */
export const jobsReady = (): Promise<unknown> => workerSchema;

/**
 * Adds a graphile-worker job with SQL, so it commits (or rolls back) with the caller's
 * transaction. Workers in any process wake on graphile-worker's own LISTEN. A task of
 * jobs/payloads.ts takes its payload type (a wrong one does not compile) and is checked against
 * its schema before it is added (a wrong one throws, naming the task and the field). Other names
 * (the tests' own task lists) take any payload, as graphile-worker's `addJob` does.
 */
export async function enqueueJob<T extends keyof GraphileWorker.Tasks | (string & {})>(
	tx: Sql | TransactionSql,
	task: T,
	payload: T extends keyof GraphileWorker.Tasks ? GraphileWorker.Tasks[T] : unknown,
	opts: EnqueueOptions = {}
): Promise<void> {
	if (isJobName(task)) parseJobPayload(task, payload);
	await workerSchema;
	await tx`select graphile_worker.add_job(
		${task},
		${JSON.stringify(payload)}::text::json,
		queue_name => ${opts.queueName ?? null}::text,
		run_at => ${opts.runAt ? opts.runAt.toISOString() : null}::timestamptz,
		max_attempts => ${opts.maxAttempts ?? null}::int,
		job_key => ${opts.jobKey ?? null}::text,
		priority => ${opts.priority ?? null}::int
	)`;
}
