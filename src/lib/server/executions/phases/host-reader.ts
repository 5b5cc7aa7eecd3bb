import type { KeyRole } from '../../proxmox/key-role';
import { execArgv, type ExecResult } from '../../ssh/client';
import { toCommand } from '../../ssh/quote';
import type { ExecutionStep } from '../../../types/executions';
import {
	classifyGuestRead,
	couldNotCheck,
	guestName,
	HostUnknown,
	noAnswer,
	untilAnswered,
	waited,
	waitingLine,
	type Attempt,
	type GuestKind,
	type GuestRead
} from '../host-reads';
import type { Link } from './link';
import { Cancelled, Failure, tail } from './outcomes';
import type { Run } from './run';

/**
 * The runner's reads of the host before (and around) the run. Each waits through a host that does
 * not answer — a timeout, a refused or dropped connection, an answer it cannot read — for up to
 * NOMOS_HOST_WAIT_MIN, asking again with longer limits (host-reads.ts `untilAnswered`), and then
 * ends the run "not run: could not check …". What they return is the host's definite answer.
 */
export interface HostReader {
	/** One command, answered with an exit status (any: the caller judges it). */
	read(argv: string[]): Promise<ExecResult>;
	/** `pct|qm status|config <vmid>`: the guest is there, or the host said it does not exist. */
	guest(kind: GuestKind, vmid: string, verb: 'status' | 'config'): Promise<Exclude<GuestRead, { state: 'unknown' }>>;
}

const BEFORE_RUN = 'cancelled by the operator before anything ran (while checking the target)';

/**
 * One attempt of a read: the host's exit status, or why there was none (the connection is dropped
 * when it may be dead). With the read key in its own process group unless told otherwise (the
 * gate's `--version` is asked of a key as it is, ssh/gate.ts).
 */
export async function attemptRead(
	run: Run,
	link: Link,
	argv: readonly string[],
	timeoutMs: number,
	{ role = 'read', group = true }: { role?: KeyRole; group?: boolean } = {}
): Promise<Attempt<ExecResult>> {
	const c = await link.connected(role);
	if ('unknown' in c) return c;
	let r: ExecResult;
	try {
		r = await execArgv(c.answer, argv, { timeoutMs, signal: run.cancel.signal, group });
	} catch (err) {
		link.drop(role);
		return { unknown: `${link.host.name} did not run the read (${(err as Error).message})` };
	}
	if (r.aborted) throw new Cancelled(BEFORE_RUN);
	const why = noAnswer(r, link.host.name);
	if (why && (r.exitCode === null && !r.timedOut ? true : r.stopped === 'unreachable')) link.drop(role);
	return why ? { unknown: why } : { answer: r };
}

/**
 * Waits for a definite answer within the budget. While it waits, a step row of its own says so
 * live ("waiting for strong to answer — 45 s", one line per attempt that did not answer); a
 * host that answers at once adds no row. No answer in time ends the run "not run: could not check …".
 */
export async function waitFor<T>(
	run: Run,
	link: Link,
	what: { subject: string; label: string; command: string },
	attempt: (timeoutMs: number) => Promise<Attempt<T>>
): Promise<T> {
	const { steps, cancel } = run;
	const { host, budgetMs } = link;
	let row: ExecutionStep | undefined;
	const misses: string[] = [];
	let noted = 0;
	const finish = async (exitCode: number | null, line: string) => {
		if (!row) return;
		delete row.waiting;
		Object.assign(row, {
			finishedAt: new Date().toISOString(),
			exitCode,
			durationMs: Date.now() - Date.parse(row.startedAt),
			stderrTail: tail([...misses, line].join('\n'))
		});
		await run.persistSteps();
	};
	try {
		const got = await untilAnswered((t) => attempt(t), {
			budgetMs,
			signal: cancel.signal,
			onWait: async (ms, n, last) => {
				row ??=
					steps[
						steps.push({
							index: steps.length,
							label: what.label,
							command: what.command,
							startedAt: new Date(Date.now() - ms).toISOString(),
							stdoutTail: '',
							stderrTail: '',
							kind: 'check'
						}) - 1
					];
				if (last && noted < n) misses.push(`attempt ${(noted = n)}: ${last}`);
				Object.assign(row, { waiting: waitingLine(host.name, ms), durationMs: ms, stderrTail: tail(misses.join('\n')) });
				await run.persistSteps();
			}
		});
		await finish(0, `${host.name} answered after ${waited(got.waitedMs)} (attempt ${got.attempts})`);
		return got.answer;
	} catch (err) {
		if (cancel.signal.aborted) {
			await finish(null, 'cancelled while waiting');
			throw new Cancelled(BEFORE_RUN);
		}
		if (!(err instanceof HostUnknown)) throw err;
		await finish(null, `no answer within ${waited(budgetMs)}`);
		throw new Failure(couldNotCheck(what.subject, host.name, budgetMs, err.why, err.answered));
	}
}

/** The host's reads before the run, about `subject` (what "could not check …" names). */
export function hostReader(run: Run, link: Link, subject: string): HostReader {
	return {
		read: (argv) => waitFor(run, link, { subject, label: `check: ${argv.join(' ')}`, command: toCommand(argv) }, (t) => attemptRead(run, link, argv, t)),
		guest: (kind, id, verb) => {
			const argv = [kind === 'ct' ? 'pct' : 'qm', verb, id];
			return waitFor(
				run,
				link,
				{ subject: guestName(kind, id), label: `check ${guestName(kind, id)}: ${argv.join(' ')}`, command: toCommand(argv) },
				async (t) => {
					const a = await attemptRead(run, link, argv, t);
					if ('unknown' in a) return a;
					const g = classifyGuestRead(kind, id, a.answer, { host: link.host.name, status: verb === 'status', what: argv.join(' ') });
					return g.state === 'unknown' ? { unknown: g.why, answered: true } : { answer: g };
				}
			);
		}
	};
}
