import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import type { MessageOrigin } from '../db/schema';
import { enqueueJob, PRIORITY } from '../jobs/enqueue';

export const RUN_TURN_TASK = 'agent__run_turn';

/** The graphile-worker job that runs one turn. */
export interface RunTurnPayload {
	sessionId: string;
	origin: MessageOrigin;
	/** Notes injected for this turn only (continuation results, question answers). */
	notes?: string[];
}

export function assertRunTurnPayload(p: unknown): asserts p is RunTurnPayload {
	const v = p as RunTurnPayload;
	if (!v || typeof v.sessionId !== 'string' || !['chat', 'resume', 'continuation'].includes(v.origin)) {
		throw new Error('invalid agent__run_turn payload');
	}
	if (v.notes !== undefined && !(Array.isArray(v.notes) && v.notes.every((n) => typeof n === 'string'))) {
		throw new Error('invalid agent__run_turn notes');
	}
}

/**
 * Queues a turn for a session, in the caller's transaction. Jobs of one session share a
 * graphile-worker queue, so turns of a session run one at a time, in order, in whichever
 * process picks them up.
 */
export async function requestTurn(tx: TransactionSql | Sql, payload: RunTurnPayload): Promise<void> {
	await enqueueJob(tx, RUN_TURN_TASK, payload, { queueName: `session:${payload.sessionId}`, maxAttempts: 1, priority: PRIORITY.reply });
}

/** Asks whichever process runs the session's turn to stop it (through the event log). */
export async function requestStop(tx: TransactionSql, sessionId: string, operatorId: string): Promise<void> {
	await emitEvent(tx, { sessionId, type: 'turn.cancel', payload: { by: operatorId } });
}
