// Backups (issue #45 item 2): a prune's dry run, the prune of exactly what it listed, one backup
// volume deleted, a backup job's retention. Described on demand with the health family
// (describe_action "health"), not in every first request. vzdump itself is in snapshots-backups.ts.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { retentionText, volidParts } from '../../../schemas/backup-params';
import { pruneArgv, pruneDigest } from '../backup-facts';
import { MIN, def } from './def';
import { backupsGone } from './read-backs';

const plural = (n: number) => `${n} backup${n === 1 ? '' : 's'}`;

export const BACKUPS = {
	backup_prune_preview: def({
		classification: 'read_only',
		description: "a prune's dry run: which backups of a guest on a storage a retention would remove, keep, or leaves as protected",
		scope: 'host',
		params: ACTION_PARAMS.backup_prune_preview,
		steps: (p) => [{ label: `prune dry run (${retentionText(p.keep)})`, argv: pruneArgv(p.storage, p.vmid, p.keep, true), timeoutMs: 30_000 }],
		digest: (p, [out]) => pruneDigest(p, out)
	}),
	backup_prune: def({
		classification: 'destructive',
		description:
			'prune backups of a guest on a storage by retention; remove: exactly the volids backup_prune_preview marks remove (a different live set is refused before it runs)',
		scope: 'host',
		params: ACTION_PARAMS.backup_prune,
		steps: (p) => [
			{ label: `prune ${plural(p.remove.length)} of ${p.vmid} on ${p.storage}`, argv: pruneArgv(p.storage, p.vmid, p.keep, false), timeoutMs: 10 * MIN }
		],
		preconditions: (p) => [{ kind: 'prune-set', storage: p.storage, vmid: p.vmid, keep: p.keep, remove: p.remove }],
		summary: (p) => `${plural(p.remove.length)} of guest ${p.vmid} removed from ${p.storage} (${retentionText(p.keep)})`,
		readBack: (p) => [backupsGone(p.storage, p.vmid, p.remove)]
	}),
	backup_delete: def({
		classification: 'destructive',
		irreversible: true,
		description: 'delete one backup volume (cannot be undone; a protected backup is refused)',
		scope: 'host',
		params: ACTION_PARAMS.backup_delete,
		steps: (p) => [{ label: `pvesm free ${p.volid}`, argv: ['pvesm', 'free', p.volid], timeoutMs: 10 * MIN }],
		preconditions: (p) => [{ kind: 'backup-deletable', storage: p.storage, vmid: volidParts(p.volid)?.vmid ?? '', volid: p.volid }],
		summary: (p) => `${p.volid} deleted`,
		readBack: (p) => [backupsGone(p.storage, undefined, [p.volid])]
	}),
	backup_job_retention: def({
		classification: 'config_mutation',
		description: "change a scheduled backup job's retention (its prune-backups), by the id backup_jobs lists",
		scope: 'host',
		params: ACTION_PARAMS.backup_job_retention,
		steps: (p) => [
			{
				label: `backup job ${p.id}: ${retentionText(p.keep)}`,
				argv: ['pvesh', 'set', `/cluster/backup/${p.id}`, '--prune-backups', retentionText(p.keep)],
				timeoutMs: MIN
			}
		],
		summary: (p) => `backup job ${p.id} keeps ${retentionText(p.keep)}`,
		readBack: (p) => [
			{
				label: `verify: job ${p.id} keeps ${retentionText(p.keep)}`,
				argv: ['pvesh', 'get', `/cluster/backup/${p.id}`, '--output-format', 'json'],
				timeoutMs: MIN,
				verify: {
					retention: retentionText(p.keep),
					anyExit: true,
					expect: retentionText(p.keep),
					failure: `backup job ${p.id} does not show ${retentionText(p.keep)}`
				}
			}
		]
	})
};

/** The backup actions, described on demand with the health family (left out of request_execution's own lines). */
export const BACKUP_ACTIONS: readonly string[] = Object.keys(BACKUPS);
