import type { Step, Verify } from '../../proxmox/actions';
import { execArgv, isGone, type ExecResult, type StopOutcome } from '../../ssh/client';
import { keyRole } from '../../proxmox/key-role';
import { toCommand } from '../../ssh/quote';
import type { ExecutionStep } from '../../../types/executions';
import { HostUnknown, noAnswer, untilAnswered, waited, waitingLine } from '../host-reads';
import { stopOnHost } from '../remote-stop';
import type { Link } from './link';
import { Cancelled, exitReason, Failure, Interrupted, stillRunning, tail } from './outcomes';
import type { Run } from './run';

const STEP_FLUSH_MS = 250;

/** A read-back step passes when some output line's first word is exactly the expected one (or its `field: value` line, or its JSON item's key). */
export function verified(v: Verify, stdout: string): boolean {
	if (v.json) {
		let data: unknown;
		try {
			data = JSON.parse(stdout);
		} catch {
			return false;
		}
		const { id, key } = v.json;
		const item = Array.isArray(data) ? (data as unknown[]).find((x) => !!x && typeof x === 'object' && (x as Record<string, unknown>).id === id) : data;
		const value = item && typeof item === 'object' ? (item as Record<string, unknown>)[key] : undefined;
		return (typeof value === 'string' || typeof value === 'number') && String(value) === v.expect;
	}
	if (v.none) {
		try {
			const data: unknown = JSON.parse(stdout);
			return Array.isArray(data) && data.length === 0;
		} catch {
			return false;
		}
	}
	if (v.field) return stdout.split('\n').some((l) => l.trim() === `${v.field}: ${v.expect}`);
	if (v.snapshot) return [...stdout.matchAll(/`->\s+(\S+)/g)].some((m) => m[1] === v.expect);
	// sha256sum escapes a file name holding a newline or backslash by starting its line with '\'.
	return stdout.split('\n').some((l) => l.trim().split(/\s+/)[0].replace(/^\\/, '') === v.expect);
}

/** How the phases run a step on the host, each recorded as a row of the card while it runs. */
export interface StepIo {
	/** Before anything more runs: a cancel ends the run here, saying how far it got. */
	stopIfCancelled: () => void;
	/** A new step row, recorded before its command starts. */
	openStep: (s: Step, kind?: ExecutionStep['kind']) => Promise<ExecutionStep>;
	/** Runs one step over SSH, recording it live; throws on failure unless `soft` (then returns false). */
	runStep: (s: Step, kind?: ExecutionStep['kind'], soft?: boolean) => Promise<boolean>;
	/** A read on a slow host, asked again while it does not answer (see below). */
	readInto: (step: ExecutionStep, s: Step) => Promise<ExecResult>;
	/** One command into its row (see below). */
	execInto: (step: ExecutionStep, s: Step, read?: boolean) => Promise<ExecResult>;
}

export function stepIo(run: Run, link: Link): StepIo {
	const { steps, cancel, mutation } = run;
	const { host, budgetMs } = link;
	const persistSteps = () => run.persistSteps();

	/** After a command had to be stopped: when its connection could not confirm it gone, a new one tries. */
	const confirmStopped = async (r: ExecResult): Promise<StopOutcome> => {
		let stop = r.stopped;
		if ((stop === null || stop === 'unreachable') && r.group) stop = await stopOnHost(host, r.group);
		stop ??= 'unreachable';
		if (!isGone(stop)) run.unsettled = true;
		return stop;
	};
	/** The mutation key's connection; one that cannot be had fails the step before anything is sent. */
	const mutationClient = async () => {
		const c = await link.connected('mutate');
		if ('unknown' in c) throw new Failure(`not run: could not connect to ${host.name} with its mutation key: ${c.unknown}`);
		return c.answer;
	};
	const stopIfCancelled = () => {
		if (!cancel.signal.aborted) return;
		if (!steps.some((x) => x.kind !== 'check')) throw new Cancelled('cancelled by the operator before anything ran');
		if (!run.mutationStarted) throw new Cancelled(`cancelled by the operator after ${steps[steps.length - 1].label}, before the approved command ran`);
		throw new Interrupted(`cancelled by the operator after ${steps[steps.length - 1].label}; the remaining steps did not run`);
	};
	const openStep = async (s: Step, kind?: ExecutionStep['kind']): Promise<ExecutionStep> => {
		stopIfCancelled();
		const step: ExecutionStep = {
			index: steps.length,
			label: s.label,
			command: toCommand(s.argv),
			startedAt: new Date().toISOString(),
			stdoutTail: '',
			stderrTail: '',
			...(kind ? { kind } : {})
		};
		steps.push(step);
		await persistSteps();
		return step;
	};
	const runStep = async (s: Step, kind?: ExecutionStep['kind'], soft = false): Promise<boolean> => {
		const step = await openStep(s, kind);
		const r = keyRole(!mutation, s, kind) === 'read' ? await readInto(step, s) : await execInto(step, s);
		if (soft && (r.timedOut || r.exitCode !== 0)) return false;
		if (r.timedOut) throw new Failure(`${s.label} timed out after ${Math.round(s.timeoutMs / 1000)} s and was stopped on the host`);
		if (r.exitCode !== 0) throw new Failure(`${s.label} exited with ${r.exitCode ?? r.signal}: ${exitReason(r)}`);
		if (kind === undefined) run.stdouts.push(r.stdout);
		// A read-back: the tool before it may exit 0 although its task failed.
		if (s.verify) {
			step.verified = verified(s.verify, r.stdout);
			await persistSteps();
			if (!step.verified) throw new Failure(`verification failed: ${s.verify.failure}`);
		}
		return true;
	};
	/**
	 * A read step (a read-only action's, a read-back, a health check) on a slow host: asked again
	 * while the host does not answer — cut at its own limit, then twice as long each time, within
	 * NOMOS_HOST_WAIT_MIN (at least its own limit) — the row saying live that it waits. A dropped
	 * connection is opened anew. An exit status is the answer, whatever it is; none in time fails
	 * the step with what is known ("could not check"), never as a verdict on the target.
	 */
	const readInto = async (step: ExecutionStep, s: Step): Promise<ExecResult> => {
		const misses: string[] = [];
		const began = Date.now();
		try {
			const got = await untilAnswered<ExecResult>(
				async (timeoutMs, n) => {
					const c = await link.connected();
					const r = 'unknown' in c ? null : await execInto(step, { ...s, timeoutMs }, true);
					const why = 'unknown' in c ? c.unknown : noAnswer(r!, host.name);
					if (!why) return { answer: r! };
					if (r && r.exitCode === null && !r.timedOut) link.drop();
					misses.push(`attempt ${n}: ${why}`);
					return { unknown: why };
				},
				{
					budgetMs: Math.max(budgetMs, s.timeoutMs),
					limitMs: s.timeoutMs,
					signal: cancel.signal,
					onWait: async (ms) => {
						// Still running until the host answers or the budget is spent: the row shows the wait.
						delete step.finishedAt;
						Object.assign(step, { waiting: waitingLine(host.name, ms), durationMs: ms, stderrTail: tail(misses.join('\n')) });
						await persistSteps();
					}
				}
			);
			if (step.waiting !== undefined || misses.length) {
				// The earlier attempts' cuts are in the stderr lines; the step itself answered.
				delete step.waiting;
				delete step.stop;
				step.stderrTail = tail([...misses, got.answer.stderr].filter(Boolean).join('\n'));
				step.durationMs = Date.now() - began;
				await persistSteps();
			}
			return got.answer;
		} catch (err) {
			if (!(err instanceof HostUnknown)) throw err;
			stopIfCancelled();
			delete step.waiting;
			Object.assign(step, { finishedAt: new Date().toISOString(), durationMs: Date.now() - began, stderrTail: tail(misses.join('\n')) });
			await persistSteps();
			const budget = Math.max(budgetMs, s.timeoutMs);
			throw new Failure(
				`${s.label}: could not check: ${host.name} did not answer within ${waited(budget)}${err.why.startsWith(`${host.name} did not answer`) ? '' : ` (last: ${err.why})`}; asked ${misses.length} times`
			);
		}
	};
	/**
	 * Runs `s`'s command over SSH into `step`, recording its output live and its end. Throws for
	 * what ends the run whatever the step (a cancel, a dropped link, a command not confirmed
	 * stopped); returns an exit or a timeout for the caller to judge. A `read` also returns a
	 * dropped link or a read left running on a host that did not confirm its stop: a read
	 * changes nothing, and readInto asks again.
	 */
	const execInto = async (step: ExecutionStep, s: Step, read = false): Promise<ExecResult> => {
		let out = '';
		let err = '';
		let timer: NodeJS.Timeout | undefined;
		const flushSoon = () => {
			timer ??= setTimeout(() => {
				timer = undefined;
				step.stdoutTail = tail(out);
				step.stderrTail = tail(err);
				void persistSteps().catch(() => undefined);
			}, STEP_FLUSH_MS);
		};
		// A read with the read key; a mutating step with the mutation key (the same one when the host has one key).
		const role = read ? 'read' : keyRole(!mutation, s, step.kind);
		const client = role === 'read' ? run.client : await mutationClient();
		// In its own process group on the host, recorded at once: whoever ends this run — a
		// cancel, a timeout, or another process after this worker died — stops all of it there.
		const r = await execArgv(client, s.argv, {
			timeoutMs: s.timeoutMs,
			signal: cancel.signal,
			onGroup: (g) => {
				step.pgid = g.pgid;
				step.groupTag = g.tag;
				void persistSteps().catch(() => undefined);
			},
			onStdout: (c) => ((out = (out + c).slice(-65_536)), flushSoon()),
			onStderr: (c) => ((err = (err + c).slice(-65_536)), flushSoon()),
			...(s.stdin !== undefined ? { stdin: Buffer.from(s.stdin, 'utf8') } : {})
		});
		clearTimeout(timer);
		const dropped = r.exitCode === null && r.signal === null && !r.timedOut && !r.aborted;
		const stop = read && !r.aborted ? r.stopped : r.aborted || r.timedOut || dropped ? await confirmStopped(r) : null;
		Object.assign(step, {
			finishedAt: new Date().toISOString(),
			exitCode: r.exitCode,
			durationMs: r.durationMs,
			stdoutTail: tail(r.stdout),
			stderrTail: tail(r.stderr),
			...(stop ? { stop } : {})
		});
		await persistSteps();
		const stillRuns = stop && !isGone(stop) ? stillRunning(stop) : null;
		if (r.aborted) {
			const who = run.cancelledByOperator
				? 'cancelled by the operator'
				: run.shuttingDown
					? 'stopped because Nomos was shutting down'
					: 'stopped (this worker lost its lease)';
			if (!mutation) throw new Cancelled(`${who} while ${s.label} was running${stillRuns ? `; ${stillRuns}` : ''}`);
			throw new Interrupted(`${who} while ${s.label} was running; ${stillRuns ?? 'it was stopped on the host and may have partly run'}`);
		}
		if (read) return r;
		if (dropped) {
			const why = `the SSH connection dropped while ${s.label} was running`;
			const then = stillRuns ?? 'it was stopped on the host after reconnecting and may have partly run';
			throw mutation ? new Interrupted(`${why}; ${then}`) : new Failure(`${why}${stillRuns ? `; ${stillRuns}` : ''}`);
		}
		if (r.timedOut && stillRuns) {
			const why = `${s.label} timed out after ${Math.round(s.timeoutMs / 1000)} s; ${stillRuns}`;
			throw mutation ? new Interrupted(why) : new Failure(why);
		}
		return r;
	};
	return { stopIfCancelled, openStep, runStep, readInto, execInto };
}
