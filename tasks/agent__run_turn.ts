import type { Task } from 'graphile-worker';
import { sql } from '../src/lib/server/db/index';
import { claimQueued } from '../src/lib/server/db/queries/messages';
import { runTurn } from '../src/lib/server/agent/run-turn';
import { assertRunTurnPayload } from '../src/lib/server/conversation/turn-queue';
import { trackTurn } from '../src/lib/server/conversation/active-turns';

/**
 * Runs one agent turn. For a chat turn it first claims the operator's queued messages; when a
 * previous job already answered them, there is nothing to do.
 */
export const agent__run_turn: Task = async (payload) => {
	assertRunTurnPayload(payload);
	if (payload.origin === 'chat') {
		const claimed = await sql().begin((tx) => claimQueued(tx, payload.sessionId));
		if (claimed === 0) return;
	}
	const turn = trackTurn(payload.sessionId);
	try {
		await runTurn({ sessionId: payload.sessionId, origin: payload.origin, notes: payload.notes, signal: turn.signal });
	} finally {
		turn.release();
	}
};
