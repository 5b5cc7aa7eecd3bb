import { randomUUID } from 'node:crypto';
import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import { enqueueJob, PRIORITY } from '../jobs/enqueue';
import type { JobPayload } from '../jobs/payloads';

export const RUN_TURN_TASK = 'agent__run_turn';

/** The graphile-worker job that runs one turn (its schema: jobs/payloads.ts). */
export type RunTurnPayload = JobPayload<'agent__run_turn'>;

/**
 * Queues a turn for a session, in the caller's transaction. Jobs of one session share a
 * graphile-worker queue, so turns of a session run one at a time, in order, in whichever
 * process picks them up. A job is retried (its process died before it began, or it threw): the
 * turn id makes the retry find a reply it already started, so a turn never runs twice.
 */
export async function requestTurn(tx: TransactionSql | Sql, payload: RunTurnPayload): Promise<void> {
	const p = payload.resume ? payload : { ...payload, turnId: payload.turnId ?? randomUUID() };
	await enqueueJob(tx, RUN_TURN_TASK, p, {
		queueName: `session:${payload.sessionId}`,
		maxAttempts: TURN_ATTEMPTS,
		priority: PRIORITY.reply,
		...(payload.resume ? { jobKey: `resume:${payload.resume}` } : {})
	});
}

/** Attempts of a turn job: enough to outlive a worker killed twice; recovery re-queues beyond that. */
export const TURN_ATTEMPTS = 5;

/** Asks whichever process runs the session's turn to stop it (through the event log). */
export async function requestStop(tx: TransactionSql, sessionId: string, operatorId: string): Promise<void> {
	await emitEvent(tx, { sessionId, type: 'turn.cancel', payload: { by: operatorId } });
}
