import { sql } from '../db/index';
import { getReplay, getReplayCase, insertReplayCase } from '../db/queries/replays';
import { Refusal } from '../refusal';
import { caseName, replayState, sessionFigures as figuresSchema, type SessionFigures } from '../../schemas/replay';
import { comparisonRows, regressions, sessionFigures, type ComparisonRow } from './compare';
import { recordingOf, runReplay, startReplay } from './run';

/**
 * Keeps a finished replay as a regression case: the inputs it answered from (so the case outlives
 * its original) and its figures, which a later run must keep. Refuses a taken name.
 */
export async function saveReplayCase(replayId: string, name: string): Promise<{ id: string; name: string }> {
	const n = caseName.parse(name);
	const row = await getReplay(sql(), replayId);
	if (!row) throw new Refusal('NOT_FOUND', 'No such replay.');
	if (replayState.parse(row.replay).status !== 'done') throw new Refusal('PRECONDITION_FAILED', 'The replay has not finished.');
	const [inputs, expected] = await Promise.all([recordingOf(replayId), sessionFigures(replayId)]);
	if (!inputs || !expected) throw new Refusal('NOT_FOUND', 'The replay’s original session is gone.');
	const saved = await sql().begin((tx) => insertReplayCase(tx, { name: n, originalSessionId: row.replayOf, replaySessionId: replayId, inputs, expected }));
	if (!saved) throw new Refusal('CONFLICT', `A case named “${n}” exists already.`);
	return { id: saved.id, name: saved.name };
}

export type CaseRun = { replayId: string; ok: boolean; problems: string[]; rows: ComparisonRow[]; expected: SessionFigures; got: SessionFigures | null };

/**
 * Replays a saved case now, in this process, against the model and tools configured now, and
 * compares its figures with the saved ones: `ok` false when it regressed (more operator actions,
 * a finding back, the goal not reached) or the replay failed.
 */
export async function runReplayCase(nameOrId: string): Promise<CaseRun> {
	const c = await getReplayCase(sql(), nameOrId);
	if (!c) throw new Refusal('NOT_FOUND', `No replay case “${nameOrId}”.`);
	const expected = figuresSchema.parse(c.expected);
	const replayId = await startReplay({ originalId: c.originalSessionId, operatorId: null, live: false, caseId: c.id, title: `case ${c.name}`, enqueue: false });
	const status = await runReplay(replayId);
	const got = await sessionFigures(replayId);
	const problems =
		status === 'done' && got
			? regressions(expected, got)
			: [`the replay ${status ?? 'vanished'}: ${replayState.parse((await getReplay(sql(), replayId))?.replay ?? { status: 'failed' }).error ?? ''}`];
	return { replayId, ok: problems.length === 0, problems, rows: got ? comparisonRows(expected, got) : [], expected, got };
}
