import type { Task } from 'graphile-worker';
import { continueSession } from '../src/lib/server/agent/continuation';
import { trackTurn } from '../src/lib/server/conversation/active-turns';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';

/**
 * Re-invokes the agent with finished executions' results. Runs in the session's queue, so it
 * never overlaps another turn of that session; executions already continued are skipped.
 */
export const agent__continue_session: Task = async (raw) => {
	const payload = parseJobPayload('agent__continue_session', raw);
	const turn = trackTurn(payload.sessionId);
	try {
		await continueSession(payload.sessionId, turn.signal);
	} finally {
		turn.release();
	}
};
