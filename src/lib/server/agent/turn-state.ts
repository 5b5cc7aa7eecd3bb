import type { TransactionSql } from 'postgres';
import type { MessageStatus, TaskState } from '../db/schema';

/** Where the session's task stands after a turn: waiting on the operator, or done/failed. */
export async function afterTurnState(tx: TransactionSql, sessionId: string, status: MessageStatus): Promise<TaskState> {
	const [row] = await tx<{ questions: number; approvals: number }[]>`
		select
			(select count(*)::int from session_questions where session_id = ${sessionId} and status = 'open') as questions,
			(select count(*)::int from executions where requested_by_session = ${sessionId} and status = 'awaiting_approval') as approvals`;
	if (row.questions > 0) return 'awaiting_input';
	if (row.approvals > 0) return 'awaiting_approval';
	if (status === 'cancelled') return 'cancelled';
	return status === 'error' ? 'failed' : 'completed';
}
