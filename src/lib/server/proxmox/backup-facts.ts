// What the backup actions read on the host and how its answers are judged (issue #45 item 2): a
// prune's dry run (`pvesm prune-backups … --dry-run 1`, in pvesm's own table), a storage's backup
// list and its free space (the API's JSON), a job's retention. Each read has three outcomes: the
// host's definite answer, or unknown — a read that failed or did not parse is never "gone",
// "none" or "room enough".
import { retentionText, type Retention } from '../../schemas/backup-params';
import type { Precondition, StepContext, Verify } from './actions/def';
import { HEALTH_READS } from './health-reads';
import { parsePctStatus, statusEntry } from './inventory';

/** What a read returned: the host's exit status and output (any exit: the judge decides). */
export type HostAnswer = { exitCode: number | null; timedOut?: boolean; stdout: string; stderr: string };

const GIB = 1024 ** 3;
const gib = (n: number) => `${(n / GIB).toFixed(1)} GiB`;
const said = (r: HostAnswer) => (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-1)[0]?.slice(0, 200) || 'no output';
const failedRead = (r: HostAnswer, what: string) =>
	r.timedOut ? `${what} did not answer in time` : `${what} exited with ${r.exitCode ?? 'no status'}: ${said(r)}`;

/** `pvesh get /nodes/localhost/storage/<s>/content --content backup [--vmid N]`: backup_list's own argv. */
export const backupListArgv = (storage: string, vmid?: string): string[] => HEALTH_READS.backup_list.steps({ storage, vmid })[0].argv;
/** `pvesh get /nodes/localhost/storage`: storage_status's own argv. */
export const storagesArgv = (): string[] => HEALTH_READS.storage_status.steps({})[0].argv;
/** `pvesm prune-backups <storage> [--dry-run 1] --vmid <id> --prune-backups keep-…` (pvesm's CLI wraps the API's prune). */
export const pruneArgv = (storage: string, vmid: string, keep: Retention, dryRun: boolean): string[] => [
	'pvesm',
	'prune-backups',
	storage,
	...(dryRun ? ['--dry-run', '1'] : []),
	'--vmid',
	vmid,
	'--prune-backups',
	retentionText(keep)
];

export type PruneEntry = { volid: string; id: string; mark: string };

/**
 * pvesm's dry-run table (pve-storage PVE/CLI/pvesm.pm, prune-backups): a NOTE, then
 * `Backup  Backup-ID  Prune-Mark` and one `<volid> <type>/<vmid> <mark>` line per backup
 * (mark: keep, remove, protected, renamed); or `No backups found`. Throws on anything else.
 */
export function parsePruneDryRun(stdout: string): PruneEntry[] {
	const lines = stdout.split('\n').map((l) => l.trim());
	if (lines.includes('No backups found')) return [];
	const head = lines.findIndex((l) => /^Backup\s+Backup-ID\s+Prune-Mark$/.test(l));
	if (head < 0) throw new Error(`not a prune dry run: ${lines.find(Boolean)?.slice(0, 120) ?? '(empty)'}`);
	return lines
		.slice(head + 1)
		.filter(Boolean)
		.map((l) => {
			const m = /^(\S+)\s+(\S+)\s+(keep|remove|protected|renamed)$/.exec(l);
			if (!m) throw new Error(`a dry-run line Nomos cannot read: ${l.slice(0, 120)}`);
			return { volid: m[1], id: m[2], mark: m[3] };
		});
}

/** The volumes a dry run marks for removal, of this guest. */
export const markedRemove = (list: PruneEntry[], vmid: string) => list.filter((e) => e.mark === 'remove' && e.id.endsWith(`/${vmid}`)).map((e) => e.volid);

export type BackupVolume = { volid: string; vmid?: number; size: number; ctime: number; protected?: number };

/** A storage's backup list (JSON); throws when it is not one. */
export function parseBackupList(stdout: string): BackupVolume[] {
	const data: unknown = JSON.parse(stdout);
	if (!Array.isArray(data)) throw new Error('the backup list is not a JSON array');
	return data.filter((v): v is BackupVolume => !!v && typeof v === 'object' && typeof (v as BackupVolume).volid === 'string');
}

/** The dry run as the model reads it: what would be removed, kept and is protected, by volid. */
export function pruneDigest(p: { storage: string; vmid: string; keep: Retention }, stdout: string): string {
	const list = parsePruneDryRun(stdout).filter((e) => e.id.endsWith(`/${p.vmid}`));
	const head = `dry run of ${retentionText(p.keep)} for guest ${p.vmid} on ${p.storage}`;
	if (!list.length) return `${head}: no backups of guest ${p.vmid}`;
	const removed = list.filter((e) => e.mark === 'remove').length;
	return [
		`${head}: ${removed} of ${list.length} would be removed (give exactly these as backup_prune's remove):`,
		...list.map((e) => `${e.mark} ${e.volid}`)
	].join('\n');
}

/** A set's difference in words: "adds x; no longer y". */
function difference(now: string[], approved: string[]): string {
	const added = now.filter((v) => !approved.includes(v));
	const gone = approved.filter((v) => !now.includes(v));
	return [added.length ? `now also ${added.join(', ')}` : '', gone.length ? `no longer ${gone.join(', ')}` : ''].filter(Boolean).join('; ');
}

type Verdict = { cannot: string } | { unknown: string } | { note: string } | null;

/** The prune's live dry run against the approved volids: null when they are exactly the same. */
function judgePruneSet(p: Extract<Precondition, { kind: 'prune-set' }>, r: HostAnswer): Verdict {
	if (r.exitCode !== 0 || r.timedOut) return { unknown: `the prune's dry run could not be read: ${failedRead(r, 'pvesm prune-backups --dry-run')}` };
	let marked: string[];
	try {
		marked = markedRemove(parsePruneDryRun(r.stdout), p.vmid);
	} catch (e) {
		return { unknown: `the prune's dry run could not be read: ${(e as Error).message}` };
	}
	const same = marked.length === p.remove.length && marked.every((v) => p.remove.includes(v));
	if (same) return null;
	return {
		cannot: `the dry run of ${retentionText(p.keep)} on ${p.storage} now marks ${marked.length} backup${marked.length === 1 ? '' : 's'} of guest ${p.vmid} for removal, not the ${p.remove.length} approved (${difference(marked, p.remove)}): nothing is removed; run backup_prune_preview again and ask with what it lists`
	};
}

/** The backup volume to delete: listed and not protected. */
function judgeDeletable(p: Extract<Precondition, { kind: 'backup-deletable' }>, r: HostAnswer): Verdict {
	if (r.exitCode !== 0 || r.timedOut) return { unknown: `the backups on ${p.storage} could not be read: ${failedRead(r, 'pvesh get …/content')}` };
	let list: BackupVolume[];
	try {
		list = parseBackupList(r.stdout);
	} catch (e) {
		return { unknown: `the backups on ${p.storage} could not be read: ${(e as Error).message}` };
	}
	const v = list.find((x) => x.volid === p.volid);
	if (!v) return { cannot: `${p.volid} is not on ${p.storage} (anymore)` };
	if (Number(v.protected) === 1)
		return { cannot: `${p.volid} is protected: Proxmox does not remove a protected backup (its protection is taken off in the storage's Backups view first)` };
	return null;
}

/** The guest's backups on a storage, newest first, from a read that answered; null when it did not. */
function guestBackups(r: HostAnswer, vmid: string): BackupVolume[] | null {
	if (r.exitCode !== 0 || r.timedOut) return null;
	try {
		return parseBackupList(r.stdout)
			.filter((v) => String(v.vmid) === vmid)
			.sort((a, b) => b.ctime - a.ctime);
	} catch {
		return null;
	}
}

/** The storage's free bytes from the node's storage list; null when it cannot be read or is not listed. */
function freeBytes(r: HostAnswer, storage: string): number | null {
	if (r.exitCode !== 0 || r.timedOut) return null;
	try {
		const data: unknown = JSON.parse(r.stdout);
		const s = Array.isArray(data) ? (data as Array<Record<string, unknown>>).find((x) => x?.storage === storage) : undefined;
		return s && typeof s.avail === 'number' ? s.avail : null;
	} catch {
		return null;
	}
}

/** Room for a backup: the reason it clearly cannot fit (less free than the guest's last backup there), else null. */
function noRoom(p: { storage: string; vmid: string }, last: BackupVolume | undefined, avail: number): string | null {
	if (!last || avail >= last.size) return null;
	const when = new Date(last.ctime * 1000).toISOString().slice(0, 16).replace('T', ' ');
	return `${p.storage} has ${gib(avail)} free, less than guest ${p.vmid}'s last backup there (${gib(last.size)}, ${when} UTC): the backup would fail for lack of space; free space first (backup_prune_preview, then backup_prune)`;
}

/** `pct status <vmid> --verbose`: the CT's status line and its vmstatus figures (`disk`: bytes its root disk uses, `maxdisk`: its size). */
export const ctUsageArgv = (vmid: string): string[] => ['pct', 'status', vmid, '--verbose'];

/**
 * A CT's root disk from `pct status --verbose`: `used` only while it runs (PVE reports `disk: 0`
 * for a stopped CT, which is "not read", never "empty"), `size` always; null when it cannot be read.
 */
function ctDisk(r: HostAnswer, vmid: string): { used: number | null; size: number | null } | { unread: string } {
	if (r.exitCode !== 0 || r.timedOut) return { unread: failedRead(r, `pct status ${vmid}`) };
	try {
		const s = statusEntry(Number(vmid), parsePctStatus(r.stdout).values);
		const used = s.status === 'running' && s.disk ? s.disk : null;
		return { used, size: s.maxdisk || null };
	} catch (e) {
		return { unread: (e as Error).message };
	}
}

/**
 * Room for a guest's first backup on a storage (no earlier one there to compare with): free space
 * against what its root disk uses now, before compression. Less free is a warning, not a refusal:
 * compression may make the archive fit, so it is no definite answer. A stopped CT's use is not
 * reported: free space of at least its disk's size still fits; below that, the room is unknown.
 */
function firstBackupRoom(p: { storage: string; vmid: string }, avail: number, r: HostAnswer): Verdict {
	const unknown = (why: string) => ({
		unknown: `the room on ${p.storage} for the first backup of CT ${p.vmid} is unknown: there is no earlier backup of it there to compare with, and ${why}`
	});
	const d = ctDisk(r, p.vmid);
	if ('unread' in d) return unknown(`its disk use could not be read (${d.unread})`);
	if (d.used !== null) {
		if (avail >= d.used) return null;
		return {
			note: `${p.storage} has ${gib(avail)} free, less than the ${gib(d.used)} CT ${p.vmid}'s root disk uses now (no earlier backup of it there to compare with): the backup will likely not fit — compression may make it smaller; free space first (backup_prune_preview, then backup_prune) or back up to another storage`
		};
	}
	if (d.size !== null && avail >= d.size) return null;
	return unknown(
		d.size === null
			? 'its disk use could not be read (pct status shows neither its use nor its size)'
			: `a stopped CT's disk use is not reported (its root disk is ${gib(d.size)}, more than the ${gib(avail)} free)`
	);
}

/** One read before approval and how its answer is judged (executions/before-approval.ts runs them); `skip`: not needed after the reads before it. */
export type BackupCheck = { argv: string[]; judge: (r: HostAnswer) => Verdict; skip?: () => boolean };

/**
 * The before-approval checks of the backup preconditions: a prune's set against its live dry run,
 * a delete's volume (there, not protected), a vzdump's room (free space against the guest's last
 * backup on that storage, or, with none there, against what its disk uses now; a figure that
 * cannot be read is unknown, said, not refused).
 */
export function backupChecks(pre: Precondition[]): BackupCheck[] {
	const out: BackupCheck[] = [];
	for (const p of pre) {
		if (p.kind === 'prune-set') {
			out.push({ argv: pruneArgv(p.storage, p.vmid, p.keep, true), judge: (r) => judgePruneSet(p, r) });
		} else if (p.kind === 'backup-deletable') {
			out.push({ argv: backupListArgv(p.storage), judge: (r) => judgeDeletable(p, r) });
		} else if (p.kind === 'backup-space') {
			let last: BackupVolume | undefined;
			let free: number | null = null;
			out.push({
				argv: backupListArgv(p.storage, p.vmid),
				judge: (r) => {
					const mine = guestBackups(r, p.vmid);
					last = mine?.[0];
					return mine ? null : { unknown: `the backups on ${p.storage} could not be read: ${failedRead(r, 'pvesh get …/content')}` };
				}
			});
			out.push({
				argv: storagesArgv(),
				judge: (r) => {
					free = freeBytes(r, p.storage);
					if (free === null)
						return { unknown: `the free space of ${p.storage} could not be read (${r.exitCode === 0 ? 'not listed' : failedRead(r, 'pvesh get …/storage')})` };
					const why = noRoom(p, last, free);
					return why ? { cannot: why } : null;
				}
			});
			out.push({
				argv: ctUsageArgv(p.vmid),
				skip: () => last !== undefined || free === null,
				judge: (r) => firstBackupRoom(p, free!, r)
			});
		}
	}
	return out;
}

/**
 * A backup precondition re-read right before the run (executions/phases/preconditions.ts): why it
 * does not hold, or null. A prune or a delete that cannot be read is not run (nothing is removed
 * on an unread answer); a vzdump whose room cannot be read runs (vzdump says itself), and leaves
 * the guest's volumes before it in `found` for its read-back.
 */
export async function backupStale(read: (argv: string[]) => Promise<HostAnswer>, p: Precondition, found: StepContext): Promise<string | null> {
	if (p.kind === 'backup-space') {
		const mine = guestBackups(await read(backupListArgv(p.storage, p.vmid)), p.vmid);
		if (mine) found.backupsBefore = mine.map((v) => v.volid);
		const avail = freeBytes(await read(storagesArgv()), p.storage);
		return avail === null ? null : noRoom(p, mine?.[0], avail);
	}
	const [check] = backupChecks([p]);
	if (!check) return null;
	const v = check.judge(await read(check.argv));
	if (!v || 'note' in v) return null;
	return 'cannot' in v ? v.cannot : `${v.unknown}: nothing is removed on an answer that cannot be read`;
}

export const isBackupPrecondition = (p: Precondition) => p.kind === 'prune-set' || p.kind === 'backup-deletable' || p.kind === 'backup-space';

type Output = { pass: boolean; showed: string } | { unreadable: string };

/** `keep-last=3,keep-daily=7` from a job's `prune-backups` (PVE keeps a property string; some views parse it). */
function retentionOf(value: unknown): string | null {
	const pairs: Array<[string, string]> =
		typeof value === 'string'
			? value
					.split(',')
					.filter(Boolean)
					.map((kv) => kv.split('=') as [string, string])
			: value && typeof value === 'object'
				? Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, String(v)])
				: [];
	if (!pairs.length) return null;
	const order = ['keep-all', 'keep-last', 'keep-hourly', 'keep-daily', 'keep-weekly', 'keep-monthly', 'keep-yearly'];
	return pairs
		.sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]))
		.map(([k, v]) => `${k}=${v}`)
		.join(',');
}

/** Judges a backup read-back (Verify.backups / Verify.retention) by its output; verdict.ts calls it. */
export function judgeBackupOutput(v: Verify, stdout: string): Output {
	let data: unknown;
	try {
		data = JSON.parse(stdout);
	} catch {
		return { unreadable: `not JSON: ${stdout.trim().split('\n')[0]?.slice(0, 120) || '(empty)'}` };
	}
	if (v.retention !== undefined) {
		if (!data || typeof data !== 'object' || Array.isArray(data)) return { unreadable: 'not a backup job' };
		const got = retentionOf((data as Record<string, unknown>)['prune-backups']);
		return { pass: got === v.retention, showed: `prune-backups ${got ?? '(none)'}` };
	}
	if (!Array.isArray(data)) return { unreadable: 'not a backup list' };
	const listed = (data as Array<Record<string, unknown>>).filter((x) => typeof x?.volid === 'string');
	const { gone, newOf } = v.backups ?? {};
	if (gone) {
		const still = gone.filter((id) => listed.some((x) => x.volid === id));
		return still.length ? { pass: false, showed: `still listed: ${still.join(', ')}` } : { pass: true, showed: `${gone.length} gone` };
	}
	if (newOf) {
		const fresh = listed.find((x) => String(x.vmid) === newOf.vmid && !newOf.before.includes(String(x.volid)));
		return fresh ? { pass: true, showed: String(fresh.volid) } : { pass: false, showed: `no new backup of guest ${newOf.vmid} listed` };
	}
	return { unreadable: 'nothing to compare' };
}
