// The node-health reads of the catalogue (issue #45): storage use, backups, backup jobs, failed
// tasks and a task's log, pending updates, ZFS pools, disks with SMART and PVE services. Each is a
// read-only action as the others in actions.ts (a fixed argv, params by zod, run at once on a
// host), with a `digest` that turns its output into a few lines for the model
// (proxmox/health-parse.ts); output that does not parse fails the read (unknown, with the reason).
// The family is described on demand (describe_action "health"), not in every first request.
import type { z } from 'zod';
import { HEALTH_PARAMS } from '../../schemas/health-params';
import {
	backupJobsSummary,
	backupSummary,
	disksSummary,
	failedTasksSummary,
	servicesSummary,
	storageSummary,
	taskLogSummary,
	updatesSummary,
	zfsSummary
} from './health-parse';

// A read of the API answers in a second or two; one cut at 30 s is asked again within NOMOS_HOST_WAIT_MIN (runner.ts readInto).
const READ_MS = 30_000;
/**
 * A read of this family as actions.ts's ActionDef has it (checked there, where the catalogue
 * spreads them in; not imported from there, which would make a cycle of the two files).
 */
type ReadDef<P extends z.ZodType> = {
	classification: 'read_only';
	description: string;
	scope: 'host';
	params: P;
	steps(p: z.output<P>): { label: string; argv: string[]; timeoutMs: number }[];
	digest(p: z.output<P>, stdout: string[]): string;
};
const def = <P extends z.ZodType>(d: ReadDef<P>) => d;
const JSON_OUT = ['--output-format', 'json'];
/** The API path's node: the target host itself (`localhost`, as pvesh resolves it) unless a member is named. */
const at = (node: string | undefined) => `/nodes/${node ?? 'localhost'}`;
const pvesh = (label: string, path: string, ...opts: string[]) => ({ label, argv: ['pvesh', 'get', path, ...opts, ...JSON_OUT], timeoutMs: READ_MS });

export const HEALTH_READS = {
	storage_status: def({
		classification: 'read_only',
		description: 'storage use per storage of a node: % used, used/total/free GiB, type, content, active',
		scope: 'host',
		params: HEALTH_PARAMS.storage_status,
		steps: (p) => [pvesh('storage status', `${at(p.node)}/storage`)],
		digest: (_p, [out]) => storageSummary(out)
	}),
	backup_list: def({
		classification: 'read_only',
		description: 'the backups on a storage: per guest count, size, newest and oldest; with vmid each volume (volid, size, time, protected, notes)',
		scope: 'host',
		params: HEALTH_PARAMS.backup_list,
		steps: (p) => [
			pvesh(`backups on ${p.storage}`, `${at(p.node)}/storage/${p.storage}/content`, '--content', 'backup', ...(p.vmid ? ['--vmid', p.vmid] : []))
		],
		digest: (p, [out]) => backupSummary(out, p.storage, p.vmid)
	}),
	backup_jobs: def({
		classification: 'read_only',
		description: 'the scheduled backup jobs: schedule, storage, guests, mode, retention (keep-last, keep-daily…), next run',
		scope: 'host',
		params: HEALTH_PARAMS.backup_jobs,
		steps: () => [pvesh('backup jobs', '/cluster/backup')],
		digest: (_p, [out]) => backupJobsSummary(out)
	}),
	tasks_failed: def({
		classification: 'read_only',
		description: "a node's recent failed tasks (backups, starts, migrations…): time, type, guest, error, UPID",
		scope: 'host',
		params: HEALTH_PARAMS.tasks_failed,
		steps: (p) => [pvesh('failed tasks', `${at(p.node)}/tasks`, '--errors', '1', '--limit', String(p.limit))],
		digest: (p, [out]) => failedTasksSummary(out, p.limit)
	}),
	task_log: def({
		classification: 'read_only',
		description:
			"one task's end status and log (its error lines and last lines), by the UPID tasks_failed lists (node: the member the UPID names, if not the target)",
		scope: 'host',
		params: HEALTH_PARAMS.task_log,
		steps: (p) => {
			// The target host's own tasks, or another member's (`node`, the one its UPID names): pvesh forwards there.
			const base = `${at(p.node)}/tasks/${p.upid}`;
			return [pvesh('task status', `${base}/status`), pvesh('task log', `${base}/log`, '--start', '0', '--limit', '1000')];
		},
		digest: (p, [status, log]) => taskLogSummary(status, log, p.lines)
	}),
	node_updates: def({
		classification: 'read_only',
		description: "a node's pending package updates (as of its last package-list refresh), Proxmox ones first, a new kernel flagged",
		scope: 'host',
		params: HEALTH_PARAMS.node_updates,
		steps: (p) => [pvesh('pending updates', `${at(p.node)}/apt/update`)],
		digest: (_p, [out]) => updatesSummary(out)
	}),
	zfs_status: def({
		classification: 'read_only',
		description: "the host's ZFS pools: health (zpool status -x), use, fragmentation",
		scope: 'host',
		params: HEALTH_PARAMS.zfs_status,
		steps: () => [
			{ label: 'zpool status -x', argv: ['zpool', 'status', '-x'], timeoutMs: READ_MS },
			{ label: 'zpool list', argv: ['zpool', 'list', '-H', '-p', '-o', 'name,size,alloc,free,frag,cap,health'], timeoutMs: READ_MS }
		],
		digest: (_p, [status, list]) => zfsSummary(status, list)
	}),
	disks_smart: def({
		classification: 'read_only',
		description: "a node's physical disks: type, model, size, SMART health, wearout, what uses them",
		scope: 'host',
		params: HEALTH_PARAMS.disks_smart,
		steps: (p) => [pvesh('disks', `${at(p.node)}/disks/list`)],
		digest: (_p, [out]) => disksSummary(out)
	}),
	pve_services: def({
		classification: 'read_only',
		description: "a node's Proxmox services (pveproxy, pvedaemon, corosync…): which are not running",
		scope: 'host',
		params: HEALTH_PARAMS.pve_services,
		steps: (p) => [pvesh('PVE services', `${at(p.node)}/services`)],
		digest: (_p, [out]) => servicesSummary(out)
	})
};

/** The family's name for describe_action, and its members (left out of request_execution's own catalogue lines). */
export const HEALTH_FAMILY = 'health';
/** What the family reads, in the catalogue's one phrase (tokens: every first request carries it). */
export const HEALTH_GIST = 'storage, backups and jobs, failed tasks, updates, ZFS, disks, services';
export const HEALTH_ACTIONS: readonly string[] = Object.keys(HEALTH_READS);
