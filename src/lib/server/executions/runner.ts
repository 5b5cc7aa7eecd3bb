import { sql } from '../db/index';
import { claimExecution } from '../db/queries/executions';
import { currentProcess } from '../jobs/current-process';
import { hub } from '../realtime/hub';
import { auditResume } from './resume';
import { authorize } from './phases/authorize';
import { preCheck } from './phases/pre-check';
import { LEASE_SECONDS, openRun, type RunOptions } from './phases/run';
import { runSteps } from './phases/run-steps';
import { settleFailed, settleSucceeded } from './phases/settle';
import { snapshot } from './phases/snapshot';
import { verify } from './phases/verify';

export { failureText, TAMPERED } from './phases/outcomes';
export { verified } from './phases/step-io';
export type { RunOptions };

/**
 * Runs one approved execution exactly as stored: claims it (a duplicate delivery gets nothing),
 * keeps a lease alive, re-checks the target, runs each templated step over SSH while recording
 * output live, and records the terminal state. Never consults the model. The phases, in order,
 * each in executions/phases/: authorize (the sealed approval) → preCheck (the host and the
 * preconditions, re-read) → snapshot → runSteps → verify (the read-backs' verdict) → settle
 * (the terminal state and the continuation; on any throw, how far it got).
 */
export async function runExecution(id: string, opts: RunOptions = {}): Promise<void> {
	// Before claiming: a process without a hub must not leave a claimed execution behind with a
	// heartbeat that keeps its lease alive forever.
	const events = hub();
	const e = await claimExecution(sql(), id, LEASE_SECONDS, currentProcess());
	if (!e) return;
	if (e.resumes > 0) await auditResume(e).catch(() => undefined);
	const run = openRun(e, opts, events);
	try {
		const vmid = await authorize(e);
		const target = await preCheck(run, vmid);
		await snapshot(run, target);
		const ran = await runSteps(run, target);
		await verify(run, target, ran);
		await settleSucceeded(run, target, ran);
	} catch (err) {
		await settleFailed(run, err);
	} finally {
		run.close();
	}
}
