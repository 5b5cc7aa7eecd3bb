import type { Sql } from '../db/index';
import type { TransactionSql } from 'postgres';

export interface EnqueueOptions {
	jobKey?: string;
	queueName?: string;
	maxAttempts?: number;
	runAt?: Date;
}

/**
 * Adds a graphile-worker job with SQL, so it commits (or rolls back) with the caller's
 * transaction. Workers in any process wake on graphile-worker's own LISTEN.
 */
export async function enqueueJob(tx: Sql | TransactionSql, task: string, payload: object, opts: EnqueueOptions = {}): Promise<void> {
	await tx`select graphile_worker.add_job(
		${task},
		${JSON.stringify(payload)}::text::json,
		queue_name => ${opts.queueName ?? null}::text,
		run_at => ${opts.runAt ? opts.runAt.toISOString() : null}::timestamptz,
		max_attempts => ${opts.maxAttempts ?? null}::int,
		job_key => ${opts.jobKey ?? null}::text
	)`;
}
