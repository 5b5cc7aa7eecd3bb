import type { Client } from 'ssh2';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import type { ExecutionRow } from '../db/queries/executions';
import type { ExecutionStep } from '../../types/executions';
import { ACTIONS, isResumable, type Resume, type Step, type Verify } from '../proxmox/actions';
import { execArgv, isGone, type ExecResult, type SshTarget } from '../ssh/client';
import { handOverToResume } from './lifecycle';
import { stopOnHost } from './remote-stop';

// An execution whose process stopped part-way is finished by a live worker when its action is
// repeatable (proxmox/actions.ts `resume`): under the approval it already has (the same hash, no
// new approval), claimed once (lifecycle.ts handOverToResume puts it back to `approved`, and
// claimExecution takes it `approved` → `running` once), audited as a resume. Its earlier
// command is stopped on the host first, then the effect is read back, the command runs again
// only if the effect is missing, and the same read verifies it. Anything unknown on the way (no
// answer, a lock, a command that would not stop) ends it `interrupted`, as before.

/** What the runner lends a resume: its recorded steps and how it runs one. */
export interface ResumeIo {
	host: SshTarget;
	client: Client;
	signal: AbortSignal;
	/** The execution's steps so far (the earlier run's first), changed in place. */
	steps: ExecutionStep[];
	persist(): Promise<void>;
	/** Records and runs a read (a step of kind `resume`); throws only as the runner's own steps do. */
	read(s: Step): Promise<ExecResult>;
	/** Records and runs a step, its `verify` judged; throws the runner's failure when it fails. */
	runStep(s: Step, kind?: ExecutionStep['kind']): Promise<boolean>;
	/** Whether a read's output shows what `v` expects (runner.ts `verified`). */
	verified(v: Verify, stdout: string): boolean;
}

export type ResumeOutcome =
	| { kind: 'done'; ran: boolean }
	/** Not resumed: it ends interrupted with `why`; `unsettled` when its earlier command may still run on the host. */
	| { kind: 'interrupted'; why: string; unsettled?: boolean };

const answer = (r: ExecResult) =>
	r.timedOut
		? 'it did not answer in time'
		: r.exitCode === null
			? 'the connection dropped'
			: `it exited with ${r.exitCode}: ${(r.stderr.trim() || r.stdout.trim()).split('\n').slice(-1)[0] || 'no output'}`;

/**
 * Finishes execution `e` (claimed by this worker, `resumes` > 0) after the earlier run's process
 * stopped: stops what of it still runs on the host, reads back whether its effect is in place,
 * runs the approved steps (`planned`) only when it is not, and verifies it with the same read.
 */
export async function resumeRun(e: ExecutionRow, vmid: string | undefined, planned: Step[], io: ResumeIo): Promise<ResumeOutcome> {
	if (!isResumable(e.action)) return { kind: 'interrupted', why: `${e.action} is not safe to repeat` };
	const resume: Resume = (ACTIONS[e.action] as { resume(p: unknown, ctx: { vmid?: string }): Resume }).resume(e.params, { vmid });
	// The earlier run's command first: nothing is read or run while it may still change the target.
	for (const s of io.steps) {
		const open = s.finishedAt === undefined || s.stop === 'running' || s.stop === 'unreachable';
		if (!open) continue;
		if (!s.pgid || !s.groupTag)
			return {
				kind: 'interrupted',
				why: `its earlier run's ${s.label} never reported its process group, so it could not be stopped first; it may have partly run`,
				unsettled: true
			};
		const stop = await stopOnHost(io.host, { pgid: s.pgid, tag: s.groupTag });
		Object.assign(s, { stop, ...(s.finishedAt === undefined ? { finishedAt: new Date().toISOString(), exitCode: null } : {}) });
		await io.persist();
		if (!isGone(stop)) {
			const where = stop === 'running' ? 'did not stop on the host when killed' : `could not be stopped: ${e.hostName ?? 'the host'} did not answer`;
			return { kind: 'interrupted', why: `its earlier run's ${s.label} ${where}; it may still be running`, unsettled: true };
		}
	}
	if (e.cancelRequestedAt) return { kind: 'interrupted', why: 'cancelled by the operator before it was resumed; its earlier run may have partly run' };
	const cfg = await execArgv(io.client, resume.config, { timeoutMs: resume.state.timeoutMs, signal: io.signal, group: true });
	if (cfg.aborted) return { kind: 'interrupted', why: 'stopped before it was resumed; its earlier run may have partly run' };
	if (cfg.exitCode !== 0)
		return { kind: 'interrupted', why: `not resumed: could not read ${resume.config.join(' ')} back (${answer(cfg)}); its earlier run may have partly run` };
	const lock = /^lock:\s*(\S+)/m.exec(cfg.stdout)?.[1];
	if (lock)
		return {
			kind: 'interrupted',
			why: `not resumed: ${resume.config.slice(0, 2).join(' ')} shows lock '${lock}' (a task on the host was left half done); its earlier run may have partly run`
		};
	const { verify, ...read } = resume.state;
	const r = await io.read(read);
	if (r.timedOut || r.exitCode !== 0)
		return { kind: 'interrupted', why: `not resumed: ${resume.state.label} gave no answer to go on (${answer(r)}); its earlier run may have partly run` };
	if (io.verified(verify, r.stdout)) return { kind: 'done', ran: false };
	for (const s of planned) await io.runStep(s);
	await io.runStep({ ...resume.state, label: resume.state.label.replace(/^read back:/, 'verify:') }, 'resume');
	return { kind: 'done', ran: true };
}

/** What the result says of a resume, after the action's own summary. */
export function resumedText(o: Extract<ResumeOutcome, { kind: 'done' }>, e: Pick<ExecutionRow, 'resumedBecause'>): string {
	const how = o.ran ? 'the read-back found it not done, so it ran again and was verified' : 'the read-back found it already done, so nothing ran again';
	return ` (resumed after the worker stopped${e.resumedBecause ? ` — ${e.resumedBecause}` : ''}: ${how})`;
}

/** The audit entry of a resume, written by the one worker that claimed it. */
export async function auditResume(e: ExecutionRow): Promise<void> {
	await recordAudit(sql(), {
		actor: null,
		action: 'execution.resumed',
		route: 'recovery',
		subjectType: 'execution',
		subjectId: e.id,
		sessionId: e.requestedBySession,
		detail: {
			action: e.action,
			target: e.target,
			hash: e.hash,
			command: e.commandPreview,
			approvedVia: e.decision?.route ?? null,
			resume: e.resumes,
			because: e.resumedBecause
		}
	});
}

/**
 * A stopping worker (SIGTERM, a restart) whose grace period ran out: when its command was
 * confirmed stopped on the host and the action is repeatable, the execution is handed to a live
 * worker to resume instead of ending interrupted. False when it was not (the caller ends it).
 */
export async function handOverOnShutdown(e: Pick<ExecutionRow, 'id' | 'action'>, runner: string | null): Promise<boolean> {
	if (!isResumable(e.action)) return false;
	const ids = await sql().begin((tx) => handOverToResume(tx, { id: e.id, runner }, 'its worker process was stopping (a restart or shutdown)'));
	return ids.length > 0;
}
