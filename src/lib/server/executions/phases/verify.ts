import { env } from '../../env';
import { ACTIONS } from '../../proxmox/actions';
import { healthHttpCheck } from '../safeguards';
import { judgeRead, judgeReads, markStep, unread, type Read, type ReadResult } from '../verdict';
import { waitForHttp } from './http-health';
import { Failure, Unhealthy } from './outcomes';
import type { Target } from './pre-check';
import type { Ran } from './run-steps';
import type { Run } from './run';

/**
 * Phase 5: a mutation's verdict from independent reads of its target after its command ran
 * (verdict.ts): verified, still failing (the run fails: its own verify step, or unhealthy after
 * a command that itself succeeded) or inconclusive (a host that did not answer the read is a read
 * without an answer, never a fact). Left on `run.verdict` for settle.ts. A read-only run has none.
 */
export async function verify(run: Run, t: Target, ran: Ran): Promise<void> {
	const { e, cancel } = run;
	if (!run.mutation) return;
	const readBacks = env().NOMOS_HEALTH_AFTER;
	const httpCheck = readBacks ? healthHttpCheck(e.action, e.params) : null;
	const limit = env().NOMOS_READBACK_TIMEOUT_S * 1000;
	const reads = ran.reads.map((r): Read => (r.step.verify ? { ...r, step: { ...r.step, timeoutMs: limit } } : r));
	const j = await judgeReads(reads, async ({ step: s, kind }) => {
		const step = await t.io.openStep(s, kind === 'own' ? undefined : kind);
		const r: ReadResult = await t.io.readInto(step, s).catch((err: Error) => {
			// A cancel or a shutdown ends the run; a host that did not answer within NOMOS_HOST_WAIT_MIN is a read without an answer.
			if (cancel.signal.aborted || !(err instanceof Failure)) throw err;
			return { error: err.message };
		});
		markStep(step, judgeRead(s, r));
		await run.persistSteps();
		return r;
	});
	run.verdict = ran.reads.length ? j : readBacks ? unread(e.action) : null;
	if (j.verdict === 'still_failing') {
		if (j.by?.kind === 'own') throw new Failure(`verification failed: ${j.by.step.verify?.failure ?? j.detail}`);
		throw new Unhealthy(`${j.by?.kind === 'health' ? 'unhealthy' : 'still failing'}: ${j.detail} (the approved command itself succeeded)`);
	}
	if (httpCheck && j.verdict === 'verified') {
		try {
			await waitForHttp(run, t, ACTIONS.vm_http_check.params.parse(httpCheck));
		} catch (err) {
			if (!(err instanceof Failure)) throw err;
			run.verdict = { verdict: 'still_failing', detail: err.message };
			throw new Unhealthy(`unhealthy: ${err.message} (the approved command itself succeeded)`);
		}
	}
}
