import { env } from '../../env';
import type { Step } from '../../proxmox/actions';
import { resumeRun, type ResumeOutcome } from '../resume';
import { readsFor, type Read } from '../verdict';
import { Interrupted } from './outcomes';
import { withTaskCause } from './task-cause';
import type { Target } from './pre-check';
import type { Run } from './run';
import { verified } from './step-io';

/** What the approved command left to judge: the reads after it (verify.ts) and, for a resume, how it ended. */
export interface Ran {
	readonly reads: Read[];
	readonly resumed: Extract<ResumeOutcome, { kind: 'done' }> | null;
}

/**
 * Phase 4: the approved steps, in order, each recorded live; the first that fails (a non-zero
 * exit, a timeout, a read-back that does not show its effect) ends the run and the rest do not
 * run. A resumed run (executions/resume.ts) stops the earlier command, reads the effect back and
 * runs the steps again only when it is missing. From here on the target may have been touched.
 */
export async function runSteps(run: Run, t: Target): Promise<Ran> {
	const { e, mutation } = run;
	run.mutationStarted = true;
	// A mutation's own verify steps, its health checks or its catalogued read-back come after
	// the approved command, as reads judged by verdict.ts: an exit status is not a verdict.
	const after = mutation ? readsFor(e.action, e.params, t.found, t.planned, env().NOMOS_HEALTH_AFTER) : { commands: t.planned, reads: [] };
	if (!run.resuming) {
		for (const s of after.commands) {
			const startedAt = Date.now();
			// A failed start: its host task's log says why (task-cause.ts), in the error the continuation reads.
			await t.io.runStep(s).catch(async (err: unknown) => {
				throw await withTaskCause(run, t, err, startedAt);
			});
		}
		return { reads: after.reads, resumed: null };
	}
	const io = {
		host: t.link.host,
		client: run.client,
		signal: run.cancel.signal,
		steps: run.steps,
		persist: run.persistSteps,
		verified,
		runStep: t.io.runStep,
		read: async (s: Step) => t.io.execInto(await t.io.openStep(s, 'resume'), s)
	};
	const r = await resumeRun(e, t.vmid, t.planned, io);
	if (r.kind === 'interrupted') {
		if (r.unsettled) run.unsettled = true;
		throw new Interrupted(r.why);
	}
	return { reads: after.reads, resumed: r };
}
