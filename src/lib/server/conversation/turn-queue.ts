import { randomUUID } from 'node:crypto';
import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import { messageOrigins, type MessageOrigin } from '../db/schema';
import { enqueueJob, PRIORITY } from '../jobs/enqueue';

export const RUN_TURN_TASK = 'agent__run_turn';

/** The graphile-worker job that runs one turn. */
export interface RunTurnPayload {
	sessionId: string;
	origin: MessageOrigin;
	/** Notes injected for this turn only (continuation results, question answers). */
	notes?: string[];
	/**
	 * The id the turn's reply gets: a retried job finds its reply already made and leaves it to
	 * recovery instead of answering twice (absent in jobs queued before it existed).
	 */
	turnId?: string;
	/** A streaming reply whose process stopped: this job resumes it (see recovery/dead-processes.ts). */
	resume?: string;
}

export function assertRunTurnPayload(p: unknown): asserts p is RunTurnPayload {
	const v = p as RunTurnPayload;
	if (!v || typeof v.sessionId !== 'string' || !(messageOrigins as readonly string[]).includes(v.origin)) {
		throw new Error('invalid agent__run_turn payload');
	}
	if ((v.turnId !== undefined && typeof v.turnId !== 'string') || (v.resume !== undefined && typeof v.resume !== 'string')) throw new Error('invalid agent__run_turn ids');
	if (v.notes !== undefined && !(Array.isArray(v.notes) && v.notes.every((n) => typeof n === 'string'))) {
		throw new Error('invalid agent__run_turn notes');
	}
}

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
