import type { StopOutcome } from '../../ssh/client';

// How a run ends, as the phases throw it and settle.ts records it: a Failure is `failed`, an
// Interrupted is `interrupted` (it may have partly run), a Cancelled is `cancelled` (nothing ran).

export class Failure extends Error {}
/** The approved command succeeded but the health check after it did not. */
export class Unhealthy extends Failure {}
/**
 * The stored record is not what the server approved (changed after, or an approval it never
 * made): nothing runs, no connection is opened, and the audit says `execution.tampered`.
 */
export class Tampered extends Failure {
	constructor(
		message: string,
		readonly what: 'content' | 'missing' | 'hash' | 'seal' | 'unsealed'
	) {
		super(message);
	}
}
export const TAMPERED = 'approval seal does not verify: refusing to run';
/** Stopped part-way: the mutation may have partly run (worker, link or operator stopped it mid-step). */
export class Interrupted extends Error {}
/** Stopped before anything ran. */
export class Cancelled extends Error {}

const TAIL = 4000;

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
export const exitReason = (r: { stdout: string; stderr: string }) => storable(failureText(r).slice(0, 500)) || 'no output';
/** The end of a stream as a step row keeps it. */
export const tail = (s: string) => (s.length > TAIL ? '…' + storable(s.slice(-TAIL)) : storable(s));

/** Why a command that had to be stopped may still run on its host. */
export const stillRunning = (stop: StopOutcome) =>
	stop === 'running'
		? 'it did not stop on the host when killed: the command may still be running'
		: 'the host could not be reached to stop it: the command may still be running';
