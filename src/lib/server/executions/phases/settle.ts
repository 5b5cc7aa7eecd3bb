import { sql } from '../../db/index';
import { recordAudit } from '../../db/queries/audit';
import { currentProcess } from '../../jobs/current-process';
import { logger } from '../../log';
import { recordLeftovers } from '../leftovers';
import { finishExecution } from '../lifecycle';
import { handOverOnShutdown, resumedText } from '../resume';
import { Cancelled, Failure, Interrupted, Tampered } from './outcomes';
import type { Target } from './pre-check';
import type { Ran } from './run-steps';
import type { Run } from './run';
import type { ActionDef } from '../../proxmox/actions';

const log = logger('runner');

/** A read's digest of its output; output that does not parse fails the read (unknown, never "none"). */
function digested(def: ActionDef, params: unknown, stdouts: string[]): string {
	try {
		return def.digest!(params, stdouts);
	} catch (err) {
		throw new Failure(`the output did not parse: ${(err as Error).message}`);
	}
}

/**
 * Phase 6, after the steps and their verdict: `succeeded`, with a summary, the verdict, and in
 * the same transaction the continuation of every linked session and an inventory refresh when
 * the action changes it (lifecycle.ts finishExecution: only from `running`, so once).
 */
export async function settleSucceeded(run: Run, t: Target, ran: Ran): Promise<void> {
	const { e, steps, verdict } = run;
	const last = steps.filter((s) => s.kind === undefined).at(-1);
	const summary = t.def.digest
		? digested(t.def, e.params, run.stdouts)
		: (t.def.summary?.(e.params as never, { vmid: t.vmid }) ?? (last?.stdoutTail ?? '').trim().split('\n').slice(-5).join('\n'));
	const healthy = verdict?.verdict === 'verified' && steps.some((s) => s.kind === 'health');
	await finishExecution(sql(), e.id, {
		status: 'succeeded',
		result: (summary || 'done (no output)') + (healthy ? ' — healthy' : '') + (ran.resumed ? resumedText(ran.resumed, e) : ''),
		error: null,
		steps,
		refreshHost: t.def.changesInventory ? e.hostName : null,
		verdict
	});
}

/**
 * Phase 6 when any phase threw: `failed`, `interrupted` (it may have partly run) or `cancelled`
 * (nothing ran), with the snapshot to roll back to; a tampered record is audited; a stopping
 * worker hands a repeatable action over to a live one instead; what a touched target was left
 * with is read back. Rethrows only an unexpected error that could not be recorded.
 */
export async function settleFailed(run: Run, err: unknown): Promise<void> {
	const { e, steps, mutation } = run;
	const id = e.id;
	const known = err instanceof Failure || err instanceof Interrupted || err instanceof Cancelled;
	const status = err instanceof Interrupted ? 'interrupted' : err instanceof Cancelled ? 'cancelled' : 'failed';
	const rollback = run.snapshot && status !== 'cancelled' ? ` Nomos took snapshot ${run.snapshot} before; the operator can roll back to it from the card.` : '';
	const text = known ? err.message : `internal error: ${(err as Error).message}`;
	const message = rollback ? `${text}${/[.!?)]$/.test(text) ? '' : '.'}${rollback}` : text;
	// Whatever went wrong may have been the connection: the next execution opens a new one.
	run.held?.release(true);
	run.held = undefined;
	run.mutator?.release(true);
	run.mutator = undefined;
	// A stopping worker: a repeatable action whose command was confirmed stopped on the host
	// goes to a live worker to resume (executions/resume.ts) instead of ending interrupted.
	if (run.shuttingDown && !run.cancelledByOperator && !run.unsettled && mutation) {
		await run.saving;
		if (await handOverOnShutdown(e, currentProcess()).catch(() => false)) return;
	}
	if (err instanceof Tampered) {
		log.warn(
			{ executionId: id, action: e.action, target: e.target, found: err.what },
			`execution ${id} refused: ${err.message} (forged or changed in the database, or this process has another NOMOS_SEAL_KEY than the one that approved it)`
		);
		await recordAudit(sql(), {
			actor: null,
			action: 'execution.tampered',
			route: 'runner',
			subjectType: 'execution',
			subjectId: id,
			sessionId: e.requestedBySession,
			detail: { action: e.action, target: e.target, hash: e.hash, found: err.what, error: err.message }
		}).catch(() => undefined);
	}
	const touched = run.mutationStarted;
	const ok = await finishExecution(sql(), id, {
		status,
		result: null,
		error: message,
		steps,
		refreshHost: touched && mutation ? e.hostName : null,
		verdict: run.verdict
	}).catch(() => false);
	// Then (the outcome is already on screen; its command stopped on the host, or said not to
	// be) read back what it left on its target; not for a precondition refusal or a cancel
	// before anything ran: nothing was touched. A command that may still run there is read back
	// again when its host answers (remote-stop.ts), also when the sweeper ended this run.
	if (touched && mutation && (ok || run.unsettled)) await recordLeftovers(e, { recheck: run.unsettled }).catch(() => undefined);
	if (!ok && !known) throw err;
}
