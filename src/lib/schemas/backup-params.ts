// The params of the backup actions (issue #45 item 2): a prune's dry run and the prune it lists,
// one backup volume deleted, a backup job's retention. Browser-safe zod, spread into ACTION_PARAMS
// (action-params.ts); proxmox/actions/backups.ts pairs each with its argv.
import { z } from 'zod';
import { storage, vmid } from './param-fields';

/** The retention options of PVE's `prune-backups` property (pve-storage prune_backups_format), each a count ≥ 1. */
export const RETENTION_KEYS = ['last', 'hourly', 'daily', 'weekly', 'monthly', 'yearly'] as const;
export type Retention = Partial<Record<(typeof RETENTION_KEYS)[number], number>>;

const count = z.number().int().min(1).max(10_000);
/** A retention as PVE's `keep-last=…,keep-daily=…` (keep-all is left out: it prunes nothing). */
export const retention = z
	.object({
		last: count.optional(),
		hourly: count.optional(),
		daily: count.optional(),
		weekly: count.optional(),
		monthly: count.optional(),
		yearly: count.optional()
	})
	.strict()
	.refine((k) => RETENTION_KEYS.some((n) => k[n] !== undefined), 'keep at least one of last, hourly, daily, weekly, monthly, yearly')
	.describe('counts to keep: last, hourly, daily, weekly, monthly, yearly');

/** `keep-last=2,keep-daily=7`, in PVE's order: the one way a retention is written on a command line. */
export function retentionText(k: Retention): string {
	return RETENTION_KEYS.filter((n) => k[n] !== undefined)
		.map((n) => `keep-${n}=${k[n]}`)
		.join(',');
}

/**
 * A backup volume as vzdump names it on a file storage (`local:backup/vzdump-lxc-101-2026_12_05-02_00_00.tar.zst`,
 * PVE::Storage::Plugin's backup name scheme) or as a Proxmox Backup Server storage lists it
 * (`pbs:backup/ct/101/2026-12-05T02:00:00Z`). Its guest id is in the name.
 */
export const BACKUP_VOLID_RE =
	/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}:backup\/(?:vzdump-(?:lxc|qemu)-[1-9][0-9]{2,8}-[0-9]{4}_[0-9]{2}_[0-9]{2}-[0-9]{2}_[0-9]{2}_[0-9]{2}\.(?:tar|vma)(?:\.(?:zst|gz|lzo))?|(?:ct|vm)\/[1-9][0-9]{2,8}\/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)$/;
export const backupVolid = z
	.string()
	.max(200)
	.regex(BACKUP_VOLID_RE, 'a backup volume as backup_list shows it, e.g. local:backup/vzdump-lxc-101-2026_12_05-02_00_00.tar.zst')
	.describe('a backup volid as backup_list shows it');

/** The storage and guest a backup volid names. */
export function volidParts(volid: string): { storage: string; vmid: string } | null {
	if (!BACKUP_VOLID_RE.test(volid)) return null;
	const storageId = volid.slice(0, volid.indexOf(':'));
	const id = /^[^:]+:backup\/(?:vzdump-(?:lxc|qemu)-|(?:ct|vm)\/)([0-9]+)/.exec(volid)![1];
	return { storage: storageId, vmid: id };
}

/** A backup job id as `/cluster/backup` lists it (`backup-0c1a2b3c-…`; PVE's pve-configid: a letter, then letters, digits, _ and -). */
export const backupJobId = z
	.string()
	.regex(/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/, 'a backup job id as backup_jobs lists it, e.g. backup-0c1a2b3c-4d5e')
	.describe('a job id as backup_jobs lists it');

const pruneOf = { storage, vmid, keep: retention };

export const BACKUP_PARAMS = {
	backup_prune_preview: z.object(pruneOf).strict(),
	backup_prune: z
		.object({
			...pruneOf,
			remove: z.array(backupVolid).min(1).max(200).describe('exactly the volids the dry run (backup_prune_preview) marks remove')
		})
		.strict()
		.refine((p) => p.remove.every((v) => volidParts(v)?.storage === p.storage && volidParts(v)?.vmid === p.vmid), {
			message: 'each volume to remove must be a backup of this guest on this storage',
			path: ['remove']
		})
		.refine((p) => new Set(p.remove).size === p.remove.length, { message: 'a volume is listed twice', path: ['remove'] }),
	backup_delete: z
		.object({ storage, volid: backupVolid })
		.strict()
		.refine((p) => volidParts(p.volid)?.storage === p.storage, { message: 'the volume must be on this storage', path: ['volid'] }),
	backup_job_retention: z.object({ id: backupJobId, keep: retention }).strict()
};
