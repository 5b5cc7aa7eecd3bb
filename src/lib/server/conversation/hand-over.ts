import type { TransactionSql } from 'postgres';
import { handOverReplies } from '../db/queries/messages';
import { requestTurn } from './turn-queue';

/**
 * Hands streaming replies over (see handOverReplies) and queues, in the same transaction, the
 * turn that resumes each one, in its session's queue: whichever live worker is free goes on
 * writing it. Used by a process that stops (SIGTERM) for its own turns and by recovery for the
 * turns of a process that died. Returns how many were handed over.
 */
export async function handOverAndResume(tx: TransactionSql, from: Parameters<typeof handOverReplies>[1]): Promise<number> {
	const replies = await handOverReplies(tx, from);
	for (const r of replies) await requestTurn(tx, { sessionId: r.sessionId, origin: r.origin, resume: r.id });
	return replies.length;
}
