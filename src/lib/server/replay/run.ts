import { sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import { insertMessage } from '../db/queries/messages';
import { getSession, sessionAudiences } from '../db/queries/sessions';
import { claimReplay, getReplay, getReplayCase, insertReplaySession, setReplayState } from '../db/queries/replays';
import { enqueueJob, PRIORITY } from '../jobs/enqueue';
import { runTurn } from '../agent/run-turn';
import { ReplayBook } from '../agent/tools/replay';
import { Refusal } from '../refusal';
import { recording as recordingSchema, replayState, type Recording, type ReplayState } from '../../schemas/replay';
import { recordSession } from './record';
import { sessionFigures } from './compare';

/**
 * Starts a replay of a session (or of a saved case's inputs): a new session marked `replay_of`
 * it, run by the worker (job replay__run) unless `enqueue: false`. Returns the replay's session id.
 */
export async function startReplay(r: {
	originalId: string | null;
	operatorId: string | null;
	live: boolean;
	caseId?: string;
	title?: string;
	enqueue?: boolean;
}): Promise<string> {
	return sql().begin(async (tx) => {
		let title = r.title;
		if (r.originalId) {
			const original = await getSession(tx, r.originalId);
			if (!original) throw new Refusal('NOT_FOUND', 'No such chat session.');
			const [marked] = await sessionAudiences(tx, [r.originalId]);
			if (marked?.replayOf) throw new Refusal('BAD_REQUEST', 'This session is itself a replay; replay its original.');
			title ??= original.title;
		}
		const state: ReplayState = { live: r.live, status: 'queued', sent: 0, total: 0, error: null, caseId: r.caseId ?? null };
		const id = await insertReplaySession(tx, { originalId: r.originalId, operatorId: r.operatorId, title: `Replay: ${title ?? 'a saved case'}`, state });
		// `npm run replay` runs it in its own process instead (runReplay), with no worker around.
		if (r.enqueue !== false) await enqueueJob(tx, 'replay__run', { replayId: id }, { priority: PRIORITY.reply, jobKey: `replay:${id}` });
		return id;
	});
}

/** The recording a replay answers from: its case's inputs, else its original session as it is now. */
export async function recordingOf(replayId: string): Promise<Recording | null> {
	const row = await getReplay(sql(), replayId);
	if (!row) return null;
	const state = replayState.parse(row.replay);
	if (state.caseId) {
		const c = await getReplayCase(sql(), state.caseId);
		return c ? recordingSchema.parse(c.inputs) : null;
	}
	return row.replayOf ? recordSession(sql(), row.replayOf) : null;
}

/**
 * Runs a queued replay to its end: each operator message of the recording in turn, through the
 * one turn runner in replay mode (tools/replay.ts: nothing runs, nothing is asked), until the
 * goal is reached or the messages run out. Progress is a `replay.updated` event per message.
 * Does nothing when the replay is not queued (a retried job, or it ran already).
 */
export async function runReplay(replayId: string): Promise<ReplayState['status'] | null> {
	const row = await getReplay(sql(), replayId);
	if (!row) return null;
	const state = replayState.parse(row.replay);
	if (!(await sql().begin((tx) => claimReplay(tx, replayId)))) return state.status;
	let sent = 0;
	let total = 0;
	try {
		const recording = await recordingOf(replayId);
		if (!recording) throw new Error('the original session (or the saved case) is gone');
		total = recording.operatorMessages.length;
		await sql().begin((tx) => setReplayState(tx, replayId, { status: 'running', sent, total }));
		// One book for the whole replay: the original's answers are handed out in order across turns.
		const book = new ReplayBook(recording, state.live);
		for (const text of recording.operatorMessages) {
			await sql().begin(async (tx) => {
				const m = await insertMessage(tx, { sessionId: replayId, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' });
				await emitEvent(tx, { sessionId: replayId, type: 'message.updated', payload: { messageId: m.id } });
			});
			await runTurn({ sessionId: replayId, origin: 'chat', replay: book });
			sent++;
			await sql().begin((tx) => setReplayState(tx, replayId, { status: 'running', sent, total }));
			// Reached sooner than the original: the rest of the operator's messages are not needed.
			if (sent < total && (await sessionFigures(replayId))?.goalReached) break;
		}
		await sql().begin((tx) => setReplayState(tx, replayId, { status: 'done', sent, total }));
		return 'done';
	} catch (e) {
		await sql().begin((tx) => setReplayState(tx, replayId, { status: 'failed', sent, total, error: (e as Error).message ?? String(e) }));
		return 'failed';
	}
}
