import type { TransactionSql } from 'postgres';
import { countWaits } from '../db/queries/sessions';
import type { MessageStatus } from '../../types/messages';
import type { TaskState } from '../db/schema';

/** Where the session's task stands after a turn: waiting on the operator, or done/failed. */
export async function afterTurnState(tx: TransactionSql, sessionId: string, status: MessageStatus): Promise<TaskState> {
	const waits = await countWaits(tx, sessionId);
	if (waits.questions > 0) return 'awaiting_input';
	if (waits.approvals > 0) return 'awaiting_approval';
	if (status === 'cancelled') return 'cancelled';
	return status === 'error' ? 'failed' : 'completed';
}
