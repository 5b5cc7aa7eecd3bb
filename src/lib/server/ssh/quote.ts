/**
 * The one place where values become shell words. SSH `exec` carries a single string that the
 * remote shell parses, so every argument is single-quoted (`'` becomes `'\''`); inside single
 * quotes the shell interprets nothing. NUL cannot be carried at all and is refused.
 */
export function shellQuote(arg: string): string {
	if (arg.includes('\0')) throw new Error('argument contains a NUL byte');
	return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Joins an argv array into one command string whose words the remote shell reads back exactly. */
export function toCommand(argv: readonly string[]): string {
	if (argv.length === 0) throw new Error('empty command');
	return argv.map(shellQuote).join(' ');
}

/** A command's own process group on a host, and the tag every process of it carries. */
export type RemoteGroup = { pgid: number; tag: string };

const TAG = /^[0-9a-f]{8,64}$/;
const MARKER = /^nomos-pgid ([0-9]+)$/;

// setsid forks when the caller already leads a process group, as the command of an sshd session
// does; -w makes it wait for that child and pass on its exit code. The child leads a new session
// and group ($$ is its pid), exports the tag, prints the marker, then execs the argv in place:
// same pid, same stdin (pct push still reads it), the argv's own exit code.
export const GROUP_SCRIPT = 'NOMOS_RUN=$1; export NOMOS_RUN; shift; echo "nomos-pgid $$"; exec "$@"';

/**
 * The argv wrapped to run in its own session and process group on the host, so that all of it
 * — the children a tool forks included — can be stopped later (`stopGroupArgv`). Its first
 * stdout line is `nomos-pgid <pgid>` (see `groupFromMarker`).
 */
export function groupedArgv(argv: readonly string[], tag: string): string[] {
	if (!TAG.test(tag)) throw new Error('a group tag is 8–64 lowercase hex digits');
	if (argv.length === 0) throw new Error('empty command');
	return ['setsid', '-w', 'sh', '-c', GROUP_SCRIPT, 'nomos', tag, ...argv];
}

/** The pgid a grouped command reported in its first stdout line, or null when the line is not the marker. */
export function groupFromMarker(line: string): number | null {
	const m = MARKER.exec(line);
	const pgid = m ? Number(m[1]) : NaN;
	return Number.isSafeInteger(pgid) && pgid > 1 ? pgid : null;
}

// "Ours" = some process whose process group is $g still carries NOMOS_RUN=$t: a zombie has no
// environment left and a reused pgid belongs to someone else, so neither is ever signalled and
// neither keeps the wait going. Plain sh and /proc only (read is a builtin: no fork per process).
// Exit 0: nothing of it was left; 2: it was running and is gone now; 3: still there after KILL.
export const STOP_SCRIPT = `g=$1 t=$2
ours() {
	for d in /proc/[0-9]*; do
		read -r s 2>/dev/null <"$d/stat" || continue
		s=\${s##*") "}
		set -- $s
		[ "$3" = "$g" ] || continue
		tr '\\0' '\\n' 2>/dev/null <"$d/environ" | grep -qx "NOMOS_RUN=$t" && return 0
	done
	return 1
}
wait_gone() {
	i=0
	while ours; do
		i=$((i + 1))
		[ "$i" -gt "$1" ] && return 1
		sleep 0.1
	done
}
ours || exit 0
kill -TERM -"$g" 2>/dev/null
wait_gone 20 && exit 2
kill -KILL -"$g" 2>/dev/null
wait_gone 50 && exit 2
exit 3`;

/**
 * Stops a grouped command's whole process group and waits until it is gone: TERM, up to 2 s to
 * exit, then KILL, up to 5 s more (exit 0 nothing left, 2 stopped now, 3 still there). Refuses pgid 0 and 1, which
 * `kill` would read as "every process".
 */
export function stopGroupArgv(g: RemoteGroup): string[] {
	if (!Number.isSafeInteger(g.pgid) || g.pgid < 2) throw new Error(`not a process group to stop: ${g.pgid}`);
	if (!TAG.test(g.tag)) throw new Error('a group tag is 8–64 lowercase hex digits');
	return ['sh', '-c', STOP_SCRIPT, 'nomos-stop', String(g.pgid), g.tag];
}
