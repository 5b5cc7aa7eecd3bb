import type { Task } from 'graphile-worker';
import { continueSession } from '../src/lib/server/agent/continuation';
import { trackTurn } from '../src/lib/server/conversation/active-turns';

/** The job queued (in the same transaction) when an execution linked to a session finishes, or a plan of it ends. */
export interface ContinueSessionPayload {
	sessionId: string;
	executionId?: string;
	planId?: string;
}

function assertPayload(p: unknown): asserts p is ContinueSessionPayload {
	const v = p as ContinueSessionPayload;
	if (!v || typeof v.sessionId !== 'string' || (typeof v.executionId !== 'string' && typeof v.planId !== 'string')) throw new Error('invalid agent__continue_session payload');
}

/**
 * Re-invokes the agent with finished executions' results. Runs in the session's queue, so it
 * never overlaps another turn of that session; executions already continued are skipped.
 */
export const agent__continue_session: Task = async (payload) => {
	assertPayload(payload);
	const turn = trackTurn(payload.sessionId);
	try {
		await continueSession(payload.sessionId, turn.signal);
	} finally {
		turn.release();
	}
};
