import type { Task } from 'graphile-worker';
import { sql } from '../src/lib/server/db/index';
import { emitEvent } from '../src/lib/server/db/queries/events';
import { runTurn } from '../src/lib/server/agent/run-turn';
import { assertRunTurnPayload, trackTurn } from '../src/lib/server/agent/turns';

/**
 * Runs one agent turn. For a chat turn it first claims the operator's queued messages; when a
 * previous job already answered them, there is nothing to do.
 */
export const agent__run_turn: Task = async (payload) => {
	assertRunTurnPayload(payload);
	if (payload.origin === 'chat') {
		const claimed = await sql().begin(async (tx) => {
			const rows = await tx<{ id: string }[]>`
				update messages set status = 'complete', rev = rev + 1, updated_at = now()
				where session_id = ${payload.sessionId} and role = 'user' and status = 'queued'
				returning id`;
			for (const r of rows) await emitEvent(tx, { sessionId: payload.sessionId, type: 'message.updated', payload: { messageId: r.id } });
			return rows.length;
		});
		if (claimed === 0) return;
	}
	const turn = trackTurn(payload.sessionId);
	try {
		await runTurn({ sessionId: payload.sessionId, origin: payload.origin, notes: payload.notes, signal: turn.signal });
	} finally {
		turn.release();
	}
};
