import type { TransactionSql } from 'postgres';
import { closeReply, getMessage, handOverReplies } from './messages';
import { isNotePart } from '../../messages/parts';
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

/** How many times one reply is resumed after its turn failed in a live process before it is closed. */
export const RESUME_LIMIT = 3;

/**
 * A turn that failed with an unexpected error (not a model fault) in a live process: its reply
 * is handed over to be resumed, unless it was resumed RESUME_LIMIT times already — then it is
 * closed with a note saying why, so a fault that repeats never loops and never leaves dots.
 */
export async function abandonReply(tx: TransactionSql, id: string, why: string): Promise<void> {
	const m = await getMessage(tx, id);
	if (!m || m.status !== 'streaming') return;
	const resumes = m.parts.filter((p) => isNotePart(p) && p.data.kind === 'resumed').length;
	if (resumes < RESUME_LIMIT) await handOverAndResume(tx, { ids: [id] });
	else await closeReply(tx, m, `Nomos could not finish this reply: ${why.slice(0, 300)} (tried ${resumes + 1} times).`);
}
