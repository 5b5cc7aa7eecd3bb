// What a read of a host said before a run: the guest is there, it is not, or nobody knows. Only
// the host's own words make a guest absent; a timeout, a refused or dropped connection, an answer
// Nomos cannot read or any other failure is unknown, and unknown is never told as "does not exist".
import { setTimeout as delay } from 'node:timers/promises';
import { formatDuration } from '../../format/time';
import { SshError, type ExecResult } from '../ssh/client';

export type GuestKind = 'ct' | 'vm';

/** "CT 105", "VM 150": how a guest is named in what Nomos says. */
export const guestName = (kind: GuestKind, vmid: string) => `${kind === 'ct' ? 'CT' : 'VM'} ${vmid}`;

/** One read of a guest: found (with `status:` when the read names one), definitely absent, or unknown because… */
export type GuestRead = { state: 'present'; stdout: string; status: string | null } | { state: 'absent' } | { state: 'unknown'; why: string };

/**
 * Whether the host said that the guest does not exist. `pct` and `qm` load the guest's config
 * through pve-guest-common's AbstractConfig `load_config`, which dies with
 * `Configuration file 'nodes/<node>/lxc/<vmid>.conf' does not exist` (`qemu-server/` for a VM)
 * when this node holds no config of that id: that sentence, for this id, and nothing else.
 */
export function saysAbsent(kind: GuestKind, vmid: string, stderr: string): boolean {
	if (!/^\d+$/.test(vmid)) return false;
	const dir = kind === 'ct' ? 'lxc' : 'qemu-server';
	return new RegExp(`^Configuration file 'nodes/[^/']+/${dir}/${vmid}\\.conf' does not exist$`, 'm').test(stderr);
}

/** How long something took, as a sentence says it: "45 s", "5 min" (never "0 s"). */
export const waited = (ms: number) => formatDuration(Math.max(1, Math.round(ms / 1000)));

const firstLine = (r: Pick<ExecResult, 'stdout' | 'stderr'>) => (r.stderr.trim() || r.stdout.trim()).split('\n')[0].slice(0, 200) || 'no output';

/**
 * Why `r` is no answer from the host at all — cut by its timeout, or its channel ended without an
 * exit status (the connection dropped) — or null when the host answered with an exit status.
 */
export function noAnswer(r: Pick<ExecResult, 'timedOut' | 'exitCode' | 'signal' | 'durationMs'>, host: string): string | null {
	if (r.timedOut) return `${host} did not answer within ${waited(r.durationMs)}`;
	if (r.exitCode === null) return r.signal ? `the read was ended by ${r.signal} on ${host}` : `the connection to ${host} dropped`;
	return null;
}

/**
 * Classifies one `pct|qm status|config <vmid>` (`status`: the read must name the guest's
 * `status:`). Exit 0 is present; the host's "does not exist" is absent; everything else is unknown.
 */
export function classifyGuestRead(kind: GuestKind, vmid: string, r: ExecResult, opts: { host: string; status: boolean; what: string }): GuestRead {
	const gone = noAnswer(r, opts.host);
	if (gone) return { state: 'unknown', why: gone };
	if (r.exitCode === 0) {
		if (!opts.status) return { state: 'present', stdout: r.stdout, status: null };
		const status = /^status:\s*(\S+)/m.exec(r.stdout)?.[1];
		return status
			? { state: 'present', stdout: r.stdout, status }
			: { state: 'unknown', why: `${opts.what} gave an answer Nomos cannot read (${firstLine(r)})` };
	}
	if (saysAbsent(kind, vmid, r.stderr)) return { state: 'absent' };
	return { state: 'unknown', why: `${opts.what} exited with ${r.exitCode}: ${firstLine(r)}` };
}

/**
 * Why a connection to the host failed when that says nothing about the host's guests — refused,
 * no route, no answer, hung up — or null for what waiting will not change (a host key that does
 * not match its pin, a login refused, an unreadable key file).
 */
export function connectFailure(err: unknown, host: string): string | null {
	if (!(err instanceof SshError)) return null;
	const m = err.message;
	if (/ECONNREFUSED/.test(m)) return `the connection to ${host} was refused`;
	if (/EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ENOTFOUND/.test(m)) return `${host} cannot be reached (${/E[A-Z_]+/.exec(m)?.[0]})`;
	if (/ETIMEDOUT|Timed out while waiting for handshake/.test(m)) return `${host} did not answer the connection`;
	if (/ECONNRESET|EPIPE|closed the connection before authentication|Connection lost/i.test(m)) return `${host} closed the connection`;
	return null;
}

/** The host gave no definite answer within the budget: nothing may be concluded from this read. */
export class HostUnknown extends Error {
	constructor(
		readonly why: string,
		readonly waitedMs: number,
		/** the host did answer, but not in a way that says yes or no (an odd exit, an unreadable answer) */
		readonly answered = false
	) {
		super(why);
	}
}

/**
 * How a budget is spent: the first attempt is cut after `firstMs` (today's 30 s at most, a tenth of
 * the budget for a short one), each next one gets twice as long (the rest of the budget at most),
 * so a host that takes 70 s per command is answered on the third; an attempt that fails fast (a
 * refused connection) is asked again after `backoffMs`, doubling up to `firstMs`. The live row is
 * refreshed every `tickMs`.
 */
export function waitPlan(budgetMs: number, limitMs = 30_000): { firstMs: number; backoffMs: number; tickMs: number } {
	const firstMs = Math.max(50, Math.min(limitMs, budgetMs / 10));
	return { firstMs, backoffMs: Math.max(10, Math.min(1_000, budgetMs / 300)), tickMs: Math.max(50, Math.min(5_000, budgetMs / 60)) };
}

/** One attempt's outcome: a definite answer, or unknown — `answered` when the host did reply, but not with yes or no. */
export type Attempt<T> = { answer: T } | { unknown: string; answered?: boolean };

export interface WaitOptions {
	budgetMs: number;
	/** the first attempt's limit before the budget shortens it (default 30 s) */
	limitMs?: number;
	signal?: AbortSignal;
	/** While no answer has come: how long it has waited, the attempt under way, why the last one did not answer. */
	onWait?: (waitedMs: number, attempt: number, lastWhy: string | null) => void | Promise<void>;
}

/**
 * Asks (`attempt(timeoutMs)`) until the host gives a definite answer, within the budget; throws
 * HostUnknown with the last reason when it has not. `onWait` is told from the moment the first
 * attempt has not answered within its limit or has failed, then every tick until the end.
 * An abort ends the wait at once (the caller's attempt sees the signal and decides what to throw).
 */
export async function untilAnswered<T>(
	attempt: (timeoutMs: number, n: number) => Promise<Attempt<T>>,
	opts: WaitOptions
): Promise<{ answer: T; waitedMs: number; attempts: number }> {
	const began = Date.now();
	const plan = waitPlan(opts.budgetMs, opts.limitMs);
	const left = () => opts.budgetMs - (Date.now() - began);
	let n = 0;
	let limit = plan.firstMs;
	let backoff = plan.backoffMs;
	let last: string | null = null;
	let lastAnswered = false;
	let waiting = false;
	let ticker: NodeJS.Timeout | undefined;
	const tell = () => (waiting ? opts.onWait?.(Date.now() - began, n, last) : undefined);
	const startWaiting = () => {
		if (waiting || !opts.onWait) return;
		waiting = true;
		ticker = setInterval(() => void Promise.resolve(tell()).catch(() => undefined), plan.tickMs);
	};
	// Not answered within the first limit: the operator sees the wait before that attempt ends.
	const firstLate = setTimeout(startWaiting, plan.firstMs);
	try {
		for (;;) {
			n++;
			const got = await attempt(Math.max(1, Math.min(limit, left())), n);
			if ('answer' in got) return { answer: got.answer, waitedMs: Date.now() - began, attempts: n };
			last = got.unknown;
			lastAnswered = got.answered === true;
			startWaiting();
			await tell();
			if (opts.signal?.aborted || left() <= 0) break;
			// An attempt that failed before its limit (refused, dropped, an odd exit) waits before the next.
			const pause = Math.min(backoff, left());
			backoff = Math.min(backoff * 2, plan.firstMs);
			await delay(pause, undefined, { signal: opts.signal }).catch(() => undefined);
			if (opts.signal?.aborted || left() <= 0) break;
			limit *= 2;
		}
		throw new HostUnknown(last ?? 'no answer', Date.now() - began, lastAnswered);
	} finally {
		clearTimeout(firstLate);
		clearInterval(ticker);
	}
}

/** The line a live step shows while its host is being waited for. */
export const waitingLine = (host: string, waitedMs: number) => `waiting for ${host} to answer — ${waited(waitedMs)}`;

/** How an execution ends whose pre-run check never got an answer: nothing ran, and what is known is said. */
export function couldNotCheck(subject: string, host: string, budgetMs: number, why: string, answered = false): string {
	if (answered) return `not run: could not check ${subject}: ${host} gave no usable answer within ${waited(budgetMs)} (last: ${why})`;
	const said = why.startsWith(`${host} did not answer`) ? '' : ` (last: ${why})`;
	return `not run: could not check ${subject}: ${host} did not answer within ${waited(budgetMs)}${said}`;
}
