import { setTimeout as delay } from 'node:timers/promises';
import type { z } from 'zod';
import type { Client } from 'ssh2';
import { sql } from '../db/index';
import { approvalVerifies, storedApproval } from '../db/queries/approvals';
import { recordAudit } from '../db/queries/audit';
import { logger } from '../log';
import { getHostByName } from '../db/queries/hosts';
import type { ExecutionStep } from '../db/schema';
import { ACTIONS, AGENT_WAIT, isActionName, type ActionDef, type Precondition, type Step, type StepContext, type Verify } from '../proxmox/actions';
import { readAgentAddress } from '../proxmox/guest-agent';
import { migrationProblems, readMigrationFacts } from '../proxmox/migrate';
import { hub } from '../realtime/hub';
import { execArgv, isGone, type ExecResult, type StopOutcome } from '../ssh/client';
import { lease } from '../ssh/pool';
import { toCommand } from '../ssh/quote';
import { clusterRefusal } from '../cluster/route';
import { recordLeftovers } from './leftovers';
import {
	classifyGuestRead,
	connectFailure,
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
} from './host-reads';
import { stopOnHost } from './remote-stop';
import { executionHash } from './prepare';
import { claimExecution, heartbeat, saveSteps, type ExecutionRow } from '../db/queries/executions';
import { finishExecution } from './lifecycle';
import { auditResume, handOverOnShutdown, resumedText, resumeRun, type ResumeOutcome } from './resume';
import { judgeRead, judgeReads, markStep, readsFor, unread, type Judged, type Read, type ReadResult } from './verdict';
import { env } from '../env';
import { currentProcess } from '../jobs/current-process';
import {
	guestOf,
	healthHttpCheck,
	listSnapshotsArgv,
	nomosSnapshotName,
	nomosSnapshots,
	pruneSteps,
	rootfsStorage,
	snapshotCapable,
	snapshotStep,
	storageType,
	vmDiskStorage,
	wantsSnapshot,
	type Guest
} from './safeguards';

const LEASE_SECONDS = 60;
const HEARTBEAT_MS = 10_000;
const TAIL = 4000;
const STEP_FLUSH_MS = 250;

/**
 * Output as it can be stored: Postgres text and jsonb cannot hold NUL (shown as ␀), and jsonb
 * rejects half a surrogate pair, which cutting a tail inside an emoji would leave behind.
 */
const storable = (s: string) => s.replace(/\0/g, '\u2400').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '');
/**
 * Why a command failed: its last lines of stderr (else stdout). A Proxmox task run from the CLI
 * (`pct migrate`, `qm migrate`) logs on stdout and its error as `<date> ERROR: …`, and leaves only
 * the task's end on stderr ("migration aborted"): then the last ERROR line says why
 * (pve-guest-common src/PVE/AbstractMigrate.pm: `$self->log('err', "migration aborted (duration
 * $duration): $err"); die "migration aborted\n";`).
 */
export function failureText(r: { stdout: string; stderr: string }): string {
	const last = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-3).join(' ');
	const taskError = r.stdout
		.split('\n')
		.reverse()
		.map((l) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ERROR: (.+)$/.exec(l.trim())?.[1])
		.find(Boolean);
	return taskError && !last.includes(taskError) ? `${taskError} (${last})` : last;
}
/** Why a command exited non-zero, as a failure message says it. */
const exitReason = (r: { stdout: string; stderr: string }) => storable(failureText(r).slice(0, 500)) || 'no output';
const tail = (s: string) => (s.length > TAIL ? '…' + storable(s.slice(-TAIL)) : storable(s));

/** A read's digest of its output; output that does not parse fails the read (unknown, never "none"). */
function digested(def: ActionDef, params: unknown, stdouts: string[]): string {
	try {
		return def.digest!(params, stdouts);
	} catch (err) {
		throw new Failure(`the output did not parse: ${(err as Error).message}`);
	}
}

/** Why a command that had to be stopped may still run on its host. */
const stillRunning = (stop: StopOutcome) =>
	stop === 'running'
		? 'it did not stop on the host when killed: the command may still be running'
		: 'the host could not be reached to stop it: the command may still be running';

const log = logger('runner');

class Failure extends Error {}
/** The approved command succeeded but the health check after it did not. */
class Unhealthy extends Failure {}
/**
 * The stored record is not what the server approved (changed after, or an approval it never
 * made): nothing runs, no connection is opened, and the audit says `execution.tampered`.
 */
class Tampered extends Failure {
	constructor(
		message: string,
		readonly what: 'content' | 'missing' | 'hash' | 'seal' | 'unsealed'
	) {
		super(message);
	}
}
export const TAMPERED = 'approval seal does not verify: refusing to run';
/** Stopped part-way: the mutation may have partly run (worker, link or operator stopped it mid-step). */
class Interrupted extends Error {}
/** Stopped before anything ran. */
class Cancelled extends Error {}

const GIB: Record<string, number> = { K: 1 / 1024 ** 2, M: 1 / 1024, G: 1, T: 1024 };

/**
 * The runner's reads of the host before (and around) the run. Each waits through a host that does
 * not answer — a timeout, a refused or dropped connection, an answer it cannot read — for up to
 * NOMOS_HOST_WAIT_MIN, asking again with longer limits (host-reads.ts `untilAnswered`), and then
 * ends the run "not run: could not check …". What they return is the host's definite answer.
 */
interface HostReader {
	/** One command, answered with an exit status (any: the caller judges it). */
	read(argv: string[]): Promise<ExecResult>;
	/** `pct|qm status|config <vmid>`: the guest is there, or the host said it does not exist. */
	guest(kind: GuestKind, vmid: string, verb: 'status' | 'config'): Promise<Exclude<GuestRead, { state: 'unknown' }>>;
}

/**
 * What must hold right before running, re-read on the host: the world may have changed since
 * approval. A reading precondition leaves what it found in `found` for the steps (StepContext).
 * Returns why not (null: it holds); `waitable` when a later read may find it holds (an agent's
 * address not there yet).
 */
async function checkPrecondition(reader: HostReader, p: Precondition, found: StepContext): Promise<{ why: string; waitable?: true } | null> {
	const why = await stale(reader, p, found);
	return why === null ? null : typeof why === 'string' ? { why } : why;
}

/** checkPrecondition's reads: a string is a refusal time will not change. Only the host's own "does not exist" makes a guest absent. */
async function stale(reader: HostReader, p: Precondition, found: StepContext): Promise<string | { why: string; waitable: true } | null> {
	if (p.kind === 'vm-agent-address') {
		const a = await readAgentAddress((argv) => reader.read(argv), p.vmid);
		if ('refuse' in a) return a.lasting ? a.refuse : { why: a.refuse, waitable: true };
		found.address = a.address;
		return null;
	}
	if (p.kind === 'migrate-target') {
		const problems = migrationProblems(await readMigrationFacts((argv) => reader.read(argv), p), p);
		return problems.length ? `the migration pre-check failed: ${problems.join('; ')}` : null;
	}
	if (p.kind === 'vm-absent') {
		// VMs and CTs share one id space: either one holding the id makes the create fail.
		if ((await reader.guest('vm', p.vmid, 'status')).state === 'present') return `VM ${p.vmid} already exists now (it did not when this was approved)`;
		if ((await reader.guest('ct', p.vmid, 'status')).state === 'present') return `CT ${p.vmid} already has id ${p.vmid}`;
		return null;
	}
	if (p.kind === 'vm-exists' || p.kind === 'vm-status') {
		const g = await reader.guest('vm', p.vmid, 'status');
		if (g.state === 'absent') return `VM ${p.vmid} does not exist (anymore)`;
		if (p.kind === 'vm-status' && g.status !== p.status) return `VM ${p.vmid} is ${g.status ?? 'in an unknown state'}, expected ${p.status}`;
		return null;
	}
	if (p.kind === 'ct-disk-grows' || p.kind === 'vm-disk-grows') {
		const [what, kind, action] = p.kind === 'ct-disk-grows' ? (['CT', 'ct', 'pct_resize'] as const) : (['VM', 'vm', 'vm_resize'] as const);
		const g = await reader.guest(kind, p.vmid, 'config');
		if (g.state === 'absent') return `${what} ${p.vmid} does not exist (anymore)`;
		const line = g.stdout.split('\n').find((l) => l.startsWith(`${p.disk}: `));
		if (!line) return `${what} ${p.vmid} has no ${p.disk}`;
		if (p.size.startsWith('+')) return null;
		const m = /(?:^|,)size=(\d+(?:\.\d+)?)([KMGT])/.exec(line.slice(p.disk.length + 2));
		if (!m) return `the size of ${what} ${p.vmid} ${p.disk} cannot be read from its config`;
		const current = Number(m[1]) * GIB[m[2]];
		const wanted = Number(p.size.slice(0, -1));
		if (wanted <= current) return `${what} ${p.vmid} ${p.disk} is ${m[1]}${m[2]} now; ${p.size} would not grow it (${action} only grows, a disk cannot shrink)`;
		return null;
	}
	const g = await reader.guest('ct', p.vmid, 'status');
	if (p.kind === 'ct-absent') return g.state === 'present' ? `CT ${p.vmid} already exists now (it did not when this was approved)` : null;
	if (g.state === 'absent') return `CT ${p.vmid} does not exist (anymore)`;
	if (p.kind === 'ct-status' && g.status !== p.status) return `CT ${p.vmid} is ${g.status ?? 'in an unknown state'}, expected ${p.status}`;
	return null;
}

/** Whether a CT's rootfs (a VM's boot disk) lives on storage that can be snapshotted (read from `pct|qm config` and `pvesm status`). */
async function canSnapshot(reader: HostReader, g: Guest): Promise<boolean> {
	const cfg = await reader.guest(g.kind, g.vmid, 'config');
	const storage = cfg.state === 'absent' ? null : g.kind === 'ct' ? rootfsStorage(cfg.stdout) : vmDiskStorage(cfg.stdout);
	if (!storage) return false;
	const st = await reader.read(['pvesm', 'status', '--storage', storage]);
	return st.exitCode === 0 && snapshotCapable(storageType(st.stdout, storage));
}

/** What a run is about, as "could not check …" names it: the guest its first check reads, else its guest, else its host. */
function subjectOf(pre: Precondition[], guest: Guest | undefined, hostName: string): string {
	const p = pre.find((x) => x.kind !== 'migrate-target') ?? pre[0];
	if (p) return guestName(p.kind.startsWith('ct-') || (p.kind === 'migrate-target' && p.guest === 'ct') ? 'ct' : 'vm', p.vmid);
	return guest ? guestName(guest.kind, guest.vmid) : hostName;
}

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
	if (v.field) return stdout.split('\n').some((l) => l.trim() === `${v.field}: ${v.expect}`);
	if (v.snapshot) return [...stdout.matchAll(/`->\s+(\S+)/g)].some((m) => m[1] === v.expect);
	// sha256sum escapes a file name holding a newline or backslash by starting its line with '\'.
	return stdout.split('\n').some((l) => l.trim().split(/\s+/)[0].replace(/^\\/, '') === v.expect);
}

export interface RunOptions {
	/** graphile-worker's: the process is stopping */
	signal?: AbortSignal;
	/** How long the HTTP health after a VM start waits (default AGENT_WAIT, 24 × 5 s): tests shorten it. */
	healthWait?: { tries: number; intervalMs: number };
}

/**
 * Runs one approved execution exactly as stored: claims it (a duplicate delivery gets nothing),
 * keeps a lease alive, re-checks the target, runs each templated step over SSH while recording
 * output live, and records the terminal state. Never consults the model.
 */
export async function runExecution(id: string, opts: RunOptions = {}): Promise<void> {
	// Before claiming: a process without a hub must not leave a claimed execution behind with a
	// heartbeat that keeps its lease alive forever.
	const events = hub();
	const e = await claimExecution(sql(), id, LEASE_SECONDS, currentProcess());
	if (!e) return;
	// Taken over after the process running it stopped (executions/resume.ts): its earlier steps stay on the card.
	const resuming = e.resumes > 0;
	if (resuming) await auditResume(e).catch(() => undefined);
	const cancel = new AbortController();
	// The process is stopping and its grace period is over (graphile-worker's abort signal).
	let shuttingDown = false;
	const onShutdown = () => ((shuttingDown = true), cancel.abort());
	if (opts.signal?.aborted) onShutdown();
	opts.signal?.addEventListener('abort', onShutdown, { once: true });
	// A heartbeat that finds the execution no longer running means the sweeper declared this
	// worker lost (e.g. after a long database outage): stop the command instead of finishing a
	// mutation everyone was already told had failed (and that may be retried).
	const beat = setInterval(() => {
		void heartbeat(sql(), id, LEASE_SECONDS).then(
			(held) => held || cancel.abort(),
			() => undefined
		);
	}, HEARTBEAT_MS);
	let cancelledByOperator = false;
	const off = events.onEvent((ev) => {
		if (ev.type === 'execution.cancel' && ev.payload.executionId === id) {
			cancelledByOperator = true;
			cancel.abort();
		}
	});
	const mutation = e.classification !== 'read_only';
	const steps: ExecutionStep[] = resuming ? [...e.steps] : [];
	// Step saves in order: a live flush or the group id must never land after the final save.
	let saving: Promise<void> = Promise.resolve();
	const persistSteps = () => {
		const saved = saving.then(() => saveSteps(sql(), e, steps));
		saving = saved.catch(() => undefined);
		return saved;
	};
	/** Set when a command had to be stopped and its host did not confirm it gone: it may still run there. */
	let unsettled = false;
	let mutationStarted = false;
	let snapshot: string | null = null;
	/** The read-back's verdict once the approved command ran (verdict.ts); stored with the outcome. */
	let verdict: Judged | null = null;
	let held: Awaited<ReturnType<typeof lease>> | undefined;
	/** The leased connection's client (a new one after a read found the old one dropped). */
	let client!: Client;
	try {
		const vmid = await checkedVmid(e);
		const host = e.hostName ? await getHostByName(sql(), e.hostName) : null;
		if (!host) throw new Failure(`host '${e.hostName}' is no longer configured`);
		const def = ACTIONS[e.action as keyof typeof ACTIONS];
		const guest = guestOf(e.action, vmid, e.params);
		const preconditions = def.preconditions?.(e.params as never, { vmid }) ?? [];
		const subject = subjectOf(preconditions, guest, host.name);
		const budgetMs = env().NOMOS_HOST_WAIT_MIN * 60_000;
		const beforeRun = 'cancelled by the operator before anything ran (while checking the target)';
		/** The pooled connection, leased again after one dropped; a host that refuses or does not answer is unknown, a wrong key or login is not. */
		const connected = async (): Promise<Attempt<Client>> => {
			if (held) return { answer: held.client };
			try {
				held = await lease(host);
				client = held.client;
				return { answer: client };
			} catch (err) {
				const why = connectFailure(err, host.name);
				if (why) return { unknown: why };
				throw new Failure((err as Error).message);
			}
		};
		const dropConnection = () => {
			held?.release(true);
			held = undefined;
		};
		/** One attempt of a read: the host's exit status, or why there was none (the connection is dropped when it may be dead). */
		const attemptRead = async (argv: string[], timeoutMs: number): Promise<Attempt<ExecResult>> => {
			const c = await connected();
			if ('unknown' in c) return c;
			let r: ExecResult;
			try {
				r = await execArgv(c.answer, argv, { timeoutMs, signal: cancel.signal, group: true });
			} catch (err) {
				dropConnection();
				return { unknown: `${host.name} did not run the read (${(err as Error).message})` };
			}
			if (r.aborted) throw new Cancelled(beforeRun);
			const why = noAnswer(r, host.name);
			if (why && (r.exitCode === null && !r.timedOut ? true : r.stopped === 'unreachable')) dropConnection();
			return why ? { unknown: why } : { answer: r };
		};
		/**
		 * Waits for a definite answer within the budget. While it waits, a step row of its own says so
		 * live ("waiting for strong to answer — 45 s", one line per attempt that did not answer); a
		 * host that answers at once adds no row. No answer in time ends the run "not run: could not check …".
		 */
		const waitFor = async <T>(what: { subject: string; label: string; command: string }, attempt: (timeoutMs: number) => Promise<Attempt<T>>): Promise<T> => {
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
				await persistSteps();
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
						await persistSteps();
					}
				});
				await finish(0, `${host.name} answered after ${waited(got.waitedMs)} (attempt ${got.attempts})`);
				return got.answer;
			} catch (err) {
				if (cancel.signal.aborted) {
					await finish(null, 'cancelled while waiting');
					throw new Cancelled(beforeRun);
				}
				if (!(err instanceof HostUnknown)) throw err;
				await finish(null, `no answer within ${waited(budgetMs)}`);
				throw new Failure(couldNotCheck(what.subject, host.name, budgetMs, err.why, err.answered));
			}
		};
		const reader: HostReader = {
			read: (argv) => waitFor({ subject, label: `check: ${argv.join(' ')}`, command: toCommand(argv) }, (t) => attemptRead(argv, t)),
			guest: (kind, id, verb) => {
				const argv = [kind === 'ct' ? 'pct' : 'qm', verb, id];
				return waitFor({ subject: guestName(kind, id), label: `check ${guestName(kind, id)}: ${argv.join(' ')}`, command: toCommand(argv) }, async (t) => {
					const a = await attemptRead(argv, t);
					if ('unknown' in a) return a;
					const g = classifyGuestRead(kind, id, a.answer, { host: host.name, status: verb === 'status', what: argv.join(' ') });
					return g.state === 'unknown' ? { unknown: g.why, answered: true } : { answer: g };
				});
			}
		};
		// A pooled connection: usually open already, so the first command starts at once. A host
		// that refuses or does not answer is waited for like any read before the run.
		client = await waitFor({ subject, label: `connect to ${host.name}`, command: '' }, () => connected());
		// Two independent reads at once, on two channels of the one connection: is the target still
		// as approved (the preconditions), and can its storage take the snapshot before (`pct config`
		// then `pvesm status`). Nothing runs on the target until both have answered.
		// A cluster member: re-read right before running, before any read of the guest (the guest may have moved, the node lost quorum since approval).
		const misrouted = await clusterRefusal(host, guest, { mutation, client, signal: cancel.signal });
		if (misrouted) throw new Failure(`not run: ${misrouted.error}${misrouted.hint ? ` (${misrouted.hint})` : ''}`);
		const snapshotWanted = !resuming && env().NOMOS_SNAPSHOT_BEFORE && wantsSnapshot(e.action, e.classification, guest);
		const snapshotPossible = snapshotWanted ? canSnapshot(reader, guest) : Promise.resolve(false);
		snapshotPossible.catch(() => undefined); // awaited below; a precondition refusal may come first
		const found: StepContext = { vmid };
		// A resume reads the effect back instead: a precondition may no longer hold because the earlier run did its work.
		for (const p of resuming ? [] : preconditions) {
			const stale = await checkPrecondition(reader, p, found);
			if (stale) throw new Failure(`not run: ${stale.why}`);
		}
		// Built after the preconditions: a step may use what they read (vm_http_check's agent address).
		const planned = def.steps(e.params as never, found);
		/** After a command had to be stopped: when its connection could not confirm it gone, a new one tries. */
		const confirmStopped = async (r: ExecResult): Promise<StopOutcome> => {
			let stop = r.stopped;
			if ((stop === null || stop === 'unreachable') && r.group) stop = await stopOnHost(host, r.group);
			stop ??= 'unreachable';
			if (!isGone(stop)) unsettled = true;
			return stop;
		};
		/** Before anything more runs: a cancel ends the run here, saying how far it got. */
		const stopIfCancelled = () => {
			if (!cancel.signal.aborted) return;
			if (!steps.some((x) => x.kind !== 'check')) throw new Cancelled('cancelled by the operator before anything ran');
			if (!mutationStarted) throw new Cancelled(`cancelled by the operator after ${steps[steps.length - 1].label}, before the approved command ran`);
			throw new Interrupted(`cancelled by the operator after ${steps[steps.length - 1].label}; the remaining steps did not run`);
		};
		/** A new step row, recorded before its command starts. */
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
		/** Runs one step over SSH, recording it live; throws on failure unless `soft` (then returns false). */
		/** The full stdout of each of the action's own steps, in order, for its `digest`. */
		const stdouts: string[] = [];
		const runStep = async (s: Step, kind?: ExecutionStep['kind'], soft = false): Promise<boolean> => {
			const step = await openStep(s, kind);
			const r = !mutation || kind === 'health' || s.verify ? await readInto(step, s) : await execInto(step, s);
			if (soft && (r.timedOut || r.exitCode !== 0)) return false;
			if (r.timedOut) throw new Failure(`${s.label} timed out after ${Math.round(s.timeoutMs / 1000)} s and was stopped on the host`);
			if (r.exitCode !== 0) throw new Failure(`${s.label} exited with ${r.exitCode ?? r.signal}: ${exitReason(r)}`);
			if (kind === undefined) stdouts.push(r.stdout);
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
						const c = await connected();
						const r = 'unknown' in c ? null : await execInto(step, { ...s, timeoutMs }, true);
						const why = 'unknown' in c ? c.unknown : noAnswer(r!, host.name);
						if (!why) return { answer: r! };
						if (r && r.exitCode === null && !r.timedOut) dropConnection();
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
				const who = cancelledByOperator
					? 'cancelled by the operator'
					: shuttingDown
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
		/**
		 * The HTTP health after a VM (re)start (`healthHttp`): the catalogued vm_http_check as it
		 * runs on its own (its preconditions read the agent's address, its step GETs it), asked
		 * again as the agent's ping is (AGENT_WAIT) until the agent reports a usable address and the
		 * service answers below 400: a fresh VM gets its DHCP lease and starts its service some
		 * seconds after its agent. Every attempt re-reads the address (parsed as an IP each time)
		 * and builds its argv the one way; all of it is one step, its label counting the attempts,
		 * its stderr one line per attempt that did not answer.
		 */
		const waitForHttp = async (params: z.output<typeof ACTIONS.vm_http_check.params>) => {
			const check = ACTIONS.vm_http_check;
			const { tries, intervalMs } = opts.healthWait ?? { tries: AGENT_WAIT.tries, intervalMs: AGENT_WAIT.intervalS * 1000 };
			const [preview] = check.steps(params, {});
			const step = await openStep({ ...preview, label: `health: ${preview.label}` }, 'health');
			const began = Date.now();
			const misses: string[] = [];
			let last = '';
			let n = 0;
			const counted = (label: string) => `health: ${label}${n > 1 ? ` (attempt ${n} of ${tries})` : ''}`;
			const miss = async (why: string) => {
				last = why;
				misses.push(`attempt ${n}: ${why}`);
				// Still running until the last attempt: the row shows the wait, not a failure.
				delete step.finishedAt;
				Object.assign(step, { durationMs: Date.now() - began, stderrTail: tail(misses.join('\n')) });
				await persistSteps();
			};
			while (n < tries) {
				if (n > 0) await delay(intervalMs, undefined, { signal: cancel.signal }).catch(() => undefined);
				stopIfCancelled();
				n++;
				const got: StepContext = {};
				let refused: Awaited<ReturnType<typeof checkPrecondition>> = null;
				for (const p of check.preconditions?.(params, {}) ?? []) {
					refused = await checkPrecondition(reader, p, got).catch((err) => {
						if (err instanceof Cancelled) stopIfCancelled();
						throw err;
					});
					if (refused) break;
				}
				if (refused) {
					step.label = counted(preview.label);
					delete step.exitCode;
					await miss(refused.why);
					if (!refused.waitable) break;
					continue;
				}
				const [s] = check.steps(params, got);
				Object.assign(step, { label: counted(s.label), command: toCommand(s.argv) });
				const r = await execInto(step, s);
				Object.assign(step, { durationMs: Date.now() - began });
				if (!r.timedOut && r.exitCode === 0) {
					step.stderrTail = tail([...misses, r.stderr].filter(Boolean).join('\n'));
					await persistSteps();
					return;
				}
				await miss(
					r.timedOut ? `${s.label} timed out after ${Math.round(s.timeoutMs / 1000)} s` : `${s.label} exited with ${r.exitCode ?? r.signal}: ${exitReason(r)}`
				);
			}
			step.finishedAt = new Date().toISOString();
			await persistSteps();
			throw new Failure(n > 1 ? `${last}; asked ${n} times, ${intervalMs / 1000} s apart` : last);
		};
		// Snapshot before: the container as it was, named for this execution only. A retry is a new
		// execution (new name); this one never runs twice (one claim, one attempt).
		if (guest && (await snapshotPossible)) {
			try {
				await runStep(snapshotStep(e.id, e.action, guest), 'snapshot');
			} catch (err) {
				if (err instanceof Failure) throw new Failure(`not run: the snapshot before failed, nothing was changed (${err.message})`);
				throw err;
			}
			snapshot = nomosSnapshotName(e.id);
			const listing = await execArgv(client, listSnapshotsArgv(guest), { timeoutMs: 30_000, signal: cancel.signal, group: true });
			if (listing.exitCode === 0) for (const p of pruneSteps(nomosSnapshots(listing.stdout), env().NOMOS_SNAPSHOT_KEEP, guest)) await runStep(p, 'prune', true);
		}
		mutationStarted = true;
		// A mutation's own verify steps, its health checks or its catalogued read-back come after
		// the approved command, as reads judged by verdict.ts: an exit status is not a verdict.
		const readBacks = env().NOMOS_HEALTH_AFTER;
		const after = mutation ? readsFor(e.action, e.params, found, planned, readBacks) : { commands: planned, reads: [] };
		let resumed: Extract<ResumeOutcome, { kind: 'done' }> | null = null;
		if (resuming) {
			const io = {
				host,
				client,
				signal: cancel.signal,
				steps,
				persist: persistSteps,
				verified,
				runStep,
				read: async (s: Step) => execInto(await openStep(s, 'resume'), s)
			};
			const r = await resumeRun(e, vmid, planned, io);
			if (r.kind === 'interrupted') {
				if (r.unsettled) unsettled = true;
				throw new Interrupted(r.why);
			}
			resumed = r;
		} else for (const s of after.commands) await runStep(s);
		const httpCheck = mutation && readBacks ? healthHttpCheck(e.action, e.params) : null;
		if (mutation) {
			const limit = env().NOMOS_READBACK_TIMEOUT_S * 1000;
			const reads = after.reads.map((r): Read => (r.step.verify ? { ...r, step: { ...r.step, timeoutMs: limit } } : r));
			const j = await judgeReads(reads, async ({ step: s, kind }) => {
				const step = await openStep(s, kind === 'own' ? undefined : kind);
				const r: ReadResult = await readInto(step, s).catch((err: Error) => {
					// A cancel or a shutdown ends the run; a host that did not answer within NOMOS_HOST_WAIT_MIN is a read without an answer.
					if (cancel.signal.aborted || !(err instanceof Failure)) throw err;
					return { error: err.message };
				});
				markStep(step, judgeRead(s, r));
				await persistSteps();
				return r;
			});
			verdict = after.reads.length ? j : readBacks ? unread(e.action) : null;
			if (j.verdict === 'still_failing') {
				if (j.by?.kind === 'own') throw new Failure(`verification failed: ${j.by.step.verify?.failure ?? j.detail}`);
				throw new Unhealthy(`${j.by?.kind === 'health' ? 'unhealthy' : 'still failing'}: ${j.detail} (the approved command itself succeeded)`);
			}
			if (httpCheck && j.verdict === 'verified') {
				try {
					await waitForHttp(ACTIONS.vm_http_check.params.parse(httpCheck));
				} catch (err) {
					if (!(err instanceof Failure)) throw err;
					verdict = { verdict: 'still_failing', detail: err.message };
					throw new Unhealthy(`unhealthy: ${err.message} (the approved command itself succeeded)`);
				}
			}
		}
		const last = steps.filter((s) => s.kind === undefined).at(-1);
		const summary = def.digest
			? digested(def, e.params, stdouts)
			: (def.summary?.(e.params as never, { vmid }) ?? (last?.stdoutTail ?? '').trim().split('\n').slice(-5).join('\n'));
		const healthy = verdict?.verdict === 'verified' && steps.some((s) => s.kind === 'health');
		await finishExecution(sql(), id, {
			status: 'succeeded',
			result: (summary || 'done (no output)') + (healthy ? ' — healthy' : '') + (resumed ? resumedText(resumed, e) : ''),
			error: null,
			steps,
			refreshHost: def.changesInventory ? e.hostName : null,
			verdict
		});
	} catch (err) {
		const known = err instanceof Failure || err instanceof Interrupted || err instanceof Cancelled;
		const status = err instanceof Interrupted ? 'interrupted' : err instanceof Cancelled ? 'cancelled' : 'failed';
		const rollback = snapshot && status !== 'cancelled' ? ` Nomos took snapshot ${snapshot} before; the operator can roll back to it from the card.` : '';
		const text = known ? err.message : `internal error: ${(err as Error).message}`;
		const message = rollback ? `${text}${/[.!?)]$/.test(text) ? '' : '.'}${rollback}` : text;
		// Whatever went wrong may have been the connection: the next execution opens a new one.
		held?.release(true);
		held = undefined;
		// A stopping worker: a repeatable action whose command was confirmed stopped on the host
		// goes to a live worker to resume (executions/resume.ts) instead of ending interrupted.
		if (shuttingDown && !cancelledByOperator && !unsettled && mutation) {
			await saving;
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
		const touched = mutationStarted;
		const ok = await finishExecution(sql(), id, {
			status,
			result: null,
			error: message,
			steps,
			refreshHost: touched && mutation ? e.hostName : null,
			verdict
		}).catch(() => false);
		// Then (the outcome is already on screen; its command stopped on the host, or said not to
		// be) read back what it left on its target; not for a precondition refusal or a cancel
		// before anything ran: nothing was touched. A command that may still run there is read back
		// again when its host answers (remote-stop.ts), also when the sweeper ended this run.
		if (touched && mutation && (ok || unsettled)) await recordLeftovers(e, { recheck: unsettled }).catch(() => undefined);
		if (!ok && !known) throw err;
	} finally {
		clearInterval(beat);
		opts.signal?.removeEventListener('abort', onShutdown);
		off();
		held?.release();
	}
}

/**
 * Checks the stored record is still exactly what was approved (its hash matches its content, and
 * for anything but read-only an approval names that hash); the steps are rebuilt from it after
 * the preconditions. Returns the container a ct-scoped action runs in.
 */
async function checkedVmid(e: ExecutionRow): Promise<string | undefined> {
	if (!isActionName(e.action)) throw new Failure(`unknown action '${e.action}'`);
	if (executionHash(e.action, e.target, e.params) !== e.hash) throw new Tampered('the stored execution does not match its hash; refusing to run', 'content');
	if (ACTIONS[e.action].classification !== 'read_only') {
		const approval = await storedApproval(sql(), e.id);
		if (approval?.hash !== e.hash) throw new Tampered('no approval names this exact execution; refusing to run', approval ? 'hash' : 'missing');
		// Made only by the server, with a key the database never holds: a row added or changed with
		// the database's rights alone (db/seal.ts) does not verify, and nothing runs.
		if (!(await approvalVerifies(approval, e.id))) throw new Tampered(TAMPERED, approval.mac ? 'seal' : 'unsealed');
	}
	return /^lxc:[^/]+\/([0-9]+)$/.exec(e.target)?.[1];
}
