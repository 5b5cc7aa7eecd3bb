// Why a guest's start failed, from the host's own task log (issue #45: "start a guest that failed
// with its error read first"). `pct start` from the CLI often says only "startup for container
// '101' failed": the cause (a full disk, a missing storage) is in the `vzstart` task's log. The
// runner (executions/phases/task-cause.ts) reads the newest failed task of that type for the guest
// since the command started, then its log, and adds the decisive line to the execution's error.
import { z } from 'zod';
import { UPID_RE } from '../../schemas/health-params';

/** How far back a failed task still counts as this run's (the host's clock may be a little off ours). */
export const TASK_SLACK_S = 60;

/** The newest failed task of `type` for the guest since `since` (epoch seconds), as JSON. */
export const failedTaskArgv = (type: string, vmid: string, since: number): string[] => [
	'pvesh',
	'get',
	'/nodes/localhost/tasks',
	'--errors',
	'1',
	'--typefilter',
	type,
	'--vmid',
	vmid,
	'--since',
	String(since),
	'--limit',
	'1',
	'--output-format',
	'json'
];

/** One task's log, as JSON lines `[{ n, t }]`. */
export const taskLogArgv = (upid: string): string[] => [
	'pvesh',
	'get',
	`/nodes/localhost/tasks/${upid}/log`,
	'--start',
	'0',
	'--limit',
	'1000',
	'--output-format',
	'json'
];

const taskRow = z.looseObject({ upid: z.string().regex(UPID_RE), status: z.string().optional() });

/** The UPID of the failed task the list shows, or null (none, or output that does not parse). */
export function failedTaskUpid(out: string): string | null {
	try {
		const rows = z.array(taskRow).parse(JSON.parse(out));
		return rows[0]?.upid ?? null;
	} catch {
		return null;
	}
}

/** What says why, most specific first: a known cause; else the task's own end ("TASK ERROR: …"); else an error-ish line. */
const CAUSES = [
	/no space left on device/i,
	/storage '[^']*' does not exist/i,
	/is locked \(/i,
	/does not exist|not found|no such file/i,
	/permission denied|read-only file system|quota exceeded/i,
	/timeout|timed out/i
];
const ERRORISH = /\b(error|failed|failure|unable|cannot|can't)\b/i;
const lastOf = (lines: string[], test: (l: string) => boolean) => [...lines].reverse().find(test);

/** The decisive line of a task's log (`[{ n, t }]` JSON), or null when it has none or does not parse. */
export function decisiveLine(logOut: string): string | null {
	let lines: string[];
	try {
		lines = z
			.array(z.looseObject({ t: z.string() }))
			.parse(JSON.parse(logOut))
			.map((l) => l.t.trim())
			.filter(Boolean);
	} catch {
		return null;
	}
	for (const re of CAUSES) {
		const hit = lastOf(lines, (l) => re.test(l));
		if (hit) return hit.slice(0, 300);
	}
	const end = lastOf(lines, (l) => l.startsWith('TASK ERROR:')) ?? lastOf(lines, (l) => ERRORISH.test(l));
	return end ? end.slice(0, 300) : null;
}
