import type { Task } from 'graphile-worker';
import { randomUUID } from 'node:crypto';
import { sql } from '../src/lib/server/db/index';
import { claimHandedOver, claimQueued, messageExists } from '../src/lib/server/db/queries/messages';
import { runTurn } from '../src/lib/server/agent/run-turn';
import { insertTurnMessage } from '../src/lib/server/agent/message-writer';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';
import { trackTurn } from '../src/lib/server/conversation/active-turns';
import { currentProcess } from '../src/lib/server/jobs/current-process';
import { offerAgentTitle } from '../src/lib/server/sessions/title';

/**
 * Runs one agent turn. A chat turn claims the operator's queued messages and makes its reply in
 * one transaction (when a previous job already answered them, there is nothing to do); a retried
 * job whose reply exists leaves it to recovery; a `resume` job takes over a reply whose process
 * stopped and goes on writing it.
 */
export const agent__run_turn: Task = async (raw) => {
	const payload = parseJobPayload('agent__run_turn', raw);
	const { sessionId, origin } = payload;
	let messageId: string;
	if (payload.resume) {
		if (!(await claimHandedOver(sql(), payload.resume, currentProcess()))) return;
		messageId = payload.resume;
	} else {
		const turnId = payload.turnId ?? randomUUID();
		const row = await sql().begin(async (tx) => {
			if (await messageExists(tx, turnId)) return null;
			if (origin === 'chat' && (await claimQueued(tx, sessionId)) === 0) return null;
			return insertTurnMessage(tx, sessionId, origin, turnId);
		});
		if (!row) return;
		messageId = row.id;
	}
	const turn = trackTurn(sessionId);
	let result;
	try {
		result = await runTurn({ sessionId, origin, notes: payload.notes, signal: turn.signal, messageId, resumed: Boolean(payload.resume) });
	} finally {
		turn.release();
	}
	// After the first answered chat turn: a better title than the first message's words (its own job, never in the turn's way).
	if (origin === 'chat' && result.status === 'complete') await offerAgentTitle(sessionId).catch(() => undefined);
};
