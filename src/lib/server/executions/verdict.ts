import { ACTIONS, isActionName, type ActionDef, type Step, type StepContext, type Verify } from '../proxmox/actions';
import type { ExecutionStep, Verdict } from '../../types/executions';
import { healthSteps } from './safeguards';
import { saysAbsent } from './host-reads';
import { judgeBackupOutput } from '../proxmox/backup-facts';

// Every mutation ends with a verdict from an independent read of its target after its command
// exited 0: the wanted state is there (verified), a definite other state is (still failing), or
// the host did not answer the read or its answer could not be read (inconclusive). An exit status
// is never a verdict; inconclusive is never success. The reads are the catalogue's own (an
// action's `verify` steps, its `readBack`) and the health checks that fit it (safeguards.ts).

export type Judged = { verdict: Verdict; detail: string };

/** What a read returned (the runner's exec), or why it could not be run. */
export type ReadResult = { exitCode: number | null; signal?: string | null; timedOut: boolean; stdout: string; stderr: string } | { error: string };

/** Who added a read: the action's own verify step, a health check, or the catalogue's readBack. */
export type ReadKind = 'own' | 'health' | 'verify';
export type Read = { step: Step; kind: ReadKind };

/**
 * The reads that judge a mutation: its own `verify` steps (part of what was approved: always),
 * then, when read-backs are on, the health checks that fit it, or else the catalogue's readBack.
 * `commands` are the steps before them (the approved command).
 */
export function readsFor(
	action: string,
	params: Record<string, unknown>,
	ctx: StepContext,
	planned: Step[],
	readBacks: boolean
): { commands: Step[]; reads: Read[] } {
	const commands = planned.filter((s) => !s.verify);
	const reads: Read[] = planned.filter((s) => s.verify).map((step) => ({ step, kind: 'own' }));
	if (!readBacks) return { commands, reads };
	const health = healthSteps(action, params, ctx.vmid);
	if (health.length) return { commands, reads: [...reads, ...health.map((step): Read => ({ step, kind: 'health' }))] };
	if (reads.length || !isActionName(action)) return { commands, reads };
	const def: ActionDef = ACTIONS[action];
	return { commands, reads: (def.readBack?.(params as never, ctx) ?? []).map((step) => ({ step, kind: 'verify' })) };
}

/** The verdict when nothing reads the effect back (pct_exec, apt_upgrade, …): only the exit status is known. */
export const unread = (action: string): Judged => ({
	verdict: 'inconclusive',
	detail: `nothing in the catalogue reads back what ${action} did: only its exit status (0) is known; check its effect with a read-only action`
});

const what = (s: Step) => s.label.replace(/^(verify|health): /, '');
const firstLine = (t: string) =>
	t
		.trim()
		.split('\n')
		.map((l) => l.trim())
		.filter(Boolean)
		.slice(-1)[0]
		?.slice(0, 200) ?? '';
/** A host too busy to answer its own tools (PVE's lock wait, a refused or reset link): no answer about the guest. */
export const BUSY = /got timeout|timed out|connection (refused|reset|closed)|temporarily unavailable|resource busy/i;

type Output = { pass: true; showed: string } | { pass: false; showed: string } | { unreadable: string };

/** Judges a read's output by its verify: the expected answer, a definite other one, or nothing to read. */
export function judgeOutput(v: Verify, stdout: string): Output {
	if (v.backups || v.retention !== undefined) return judgeBackupOutput(v, stdout);
	const lines = stdout.split('\n').map((l) => l.trim());
	if (v.json) {
		let data: unknown;
		try {
			data = JSON.parse(stdout);
		} catch {
			return { unreadable: `not JSON: ${firstLine(stdout) || '(empty)'}` };
		}
		const { id, key } = v.json;
		const item = Array.isArray(data) ? (data as unknown[]).find((x) => !!x && typeof x === 'object' && (x as Record<string, unknown>).id === id) : data;
		if (!item || typeof item !== 'object') return { pass: false, showed: `${id ?? 'it'} is not listed` };
		const value = (item as Record<string, unknown>)[key];
		const got = typeof value === 'string' || typeof value === 'number' ? String(value) : null;
		return got === v.expect ? { pass: true, showed: `${key}: ${got}` } : { pass: false, showed: `${key}: ${got ?? '(none)'}` };
	}
	if (v.none) {
		let data: unknown;
		try {
			data = JSON.parse(stdout);
		} catch {
			return { unreadable: `not JSON: ${firstLine(stdout) || '(empty)'}` };
		}
		if (!Array.isArray(data)) return { unreadable: `not a list: ${firstLine(stdout)}` };
		const label = (x: unknown) => {
			const name = x && typeof x === 'object' ? ((x as Record<string, unknown>).Package ?? (x as Record<string, unknown>).id) : x;
			return typeof name === 'string' || typeof name === 'number' ? String(name) : '?';
		};
		const names = data.map(label);
		return names.length ? { pass: false, showed: `${names.length} still listed: ${names.slice(0, 8).join(', ')}` } : { pass: true, showed: v.expect };
	}
	if (v.fields) {
		const config = new Map(
			lines
				.map((l) => /^([A-Za-z][\w-]*):\s?(.*)$/.exec(l))
				.filter((m) => m !== null)
				.map((m) => [m[1], m[2]])
		);
		if (!config.size) return { unreadable: `no config lines: ${firstLine(stdout) || '(empty)'}` };
		for (const [key, want] of Object.entries(v.fields)) {
			const got = config.get(key);
			if (want === null ? got !== undefined : got === undefined || !got.split(',').includes(want))
				return { pass: false, showed: got === undefined ? `no ${key}` : `${key}: ${got}` };
		}
		return { pass: true, showed: v.expect };
	}
	if (v.field) {
		const line = lines.find((l) => l.startsWith(`${v.field}:`));
		if (!line) return { unreadable: `no ${v.field}: line in ${firstLine(stdout) || '(empty)'}` };
		return line === `${v.field}: ${v.expect}` ? { pass: true, showed: line } : { pass: false, showed: line };
	}
	if (!lines.some(Boolean)) return { unreadable: 'an empty answer' };
	// sha256sum escapes a file name holding a newline or backslash by starting its line with '\'.
	const hit = lines.some((l) => l.split(/\s+/)[0].replace(/^\\/, '') === v.expect);
	return { pass: hit, showed: hit ? v.expect : firstLine(stdout) };
}

/**
 * Whether the host itself said the guest a `pct|qm status <vmid>` read asked about is absent: only
 * pct/qm's own "Configuration file … does not exist" does. Any other failure (an SSH error, "no
 * such file" from a broken node, a lock) says nothing about the guest: the read is inconclusive.
 */
function saysGone(s: Step, stderr: string): boolean {
	const [tool, , vmid] = s.argv;
	if (tool !== 'pct' && tool !== 'qm') return false;
	return saysAbsent(tool === 'pct' ? 'ct' : 'vm', vmid ?? '', stderr);
}

/** One read's verdict. */
export function judgeRead(s: Step, r: ReadResult): Judged {
	const by = `${s.argv.slice(0, 2).join(' ')}`;
	if ('error' in r) return { verdict: 'inconclusive', detail: `could not read ${what(s)}: ${r.error}` };
	if (r.timedOut) return { verdict: 'inconclusive', detail: `could not read ${what(s)}: ${by} did not answer within ${Math.round(s.timeoutMs / 1000)} s` };
	if (r.exitCode === null)
		return { verdict: 'inconclusive', detail: `could not read ${what(s)}: ${by} ended without an exit status${r.signal ? ` (${r.signal})` : ''}` };
	const said = firstLine(r.stderr) || firstLine(r.stdout);
	if (r.exitCode !== 0 && BUSY.test(`${r.stderr}\n${r.stdout}`))
		return { verdict: 'inconclusive', detail: `could not read ${what(s)}: the host answered ${by} with "${said}"` };
	const v = s.verify;
	if (!v) {
		return r.exitCode === 0
			? { verdict: 'verified', detail: `${what(s)} (read back: ${said || 'exit 0'})` }
			: { verdict: 'still_failing', detail: `${what(s)}: ${by} exited with ${r.exitCode}: ${said || 'no output'}` };
	}
	if (v.gone) {
		if (r.exitCode === 0) return { verdict: 'still_failing', detail: `${v.failure}; read back: ${firstLine(r.stdout) || 'exit 0'}` };
		return saysGone(s, r.stderr)
			? { verdict: 'verified', detail: `${what(s)} (read back: ${said})` }
			: { verdict: 'inconclusive', detail: `could not read ${what(s)}: ${by} exited with ${r.exitCode}: ${said || 'no output'}` };
	}
	if (r.exitCode !== 0 && !v.anyExit) return { verdict: 'still_failing', detail: `${v.failure}: ${by} exited with ${r.exitCode}: ${said || 'no output'}` };
	const o = judgeOutput(v, r.stdout);
	if ('unreadable' in o) return { verdict: 'inconclusive', detail: `could not read ${what(s)}: ${by} gave ${o.unreadable}` };
	return o.pass
		? { verdict: 'verified', detail: `${what(s)} (read back: ${o.showed})` }
		: { verdict: 'still_failing', detail: `${v.failure}; read back: ${o.showed}` };
}

/**
 * Runs the reads in order (each recorded as a step by `read`) and judges them: the first read
 * that does not verify decides (a later one would read a guest already known wrong, or a host
 * that did not answer); all verified, verified. `read` throws only for what ends the run (a
 * cancel); anything else it throws is the host not answering: inconclusive.
 */
export async function judgeReads(reads: Read[], read: (r: Read) => Promise<ReadResult>): Promise<Judged & { by?: Read }> {
	const details: string[] = [];
	for (const r of reads) {
		const j = judgeRead(r.step, await read(r));
		if (j.verdict !== 'verified') return { ...j, by: r };
		details.push(j.detail);
	}
	return { verdict: 'verified', detail: details.join('; ') };
}

/** Marks a read-back step as the card shows it (✓ / ✗). */
export function markStep(step: ExecutionStep, j: Judged): void {
	if (j.verdict !== 'inconclusive') step.verified = j.verdict === 'verified';
}
