// Snapshots of containers and VMs (taken, rolled back, deleted) and vzdump backups.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { retentionText } from '../../../schemas/backup-params';
import { MIN, def, exists, vmExists } from './def';
import { newBackup, statusIs, resumeToSnapshot } from './read-backs';

export const SNAPSHOTS_BACKUPS = {
	pct_snapshot: def({
		classification: 'config_mutation',
		description: 'take a snapshot of a container (its storage must support snapshots, e.g. lvmthin or zfs)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_snapshot,
		steps: (p, { vmid }) => [
			{
				label: `pct snapshot ${p.name}`,
				argv: ['pct', 'snapshot', vmid!, p.name, ...(p.description !== undefined ? ['--description', p.description] : [])],
				timeoutMs: 10 * MIN
			}
		],
		preconditions: (_p, { vmid }) => exists(vmid!),
		summary: (p, { vmid }) => `snapshot ${p.name} of CT ${vmid} taken`,
		resume: (p, { vmid }) => resumeToSnapshot('CT', vmid!, p.name)
	}),
	pct_rollback: def({
		classification: 'destructive',
		description: 'roll a container back to a snapshot (everything since is lost; a running CT is stopped first)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_rollback,
		steps: (p, { vmid }) => [
			{ label: `pct rollback ${p.name}`, argv: ['pct', 'rollback', vmid!, p.name, ...(p.start ? ['--start', '1'] : [])], timeoutMs: 10 * MIN }
		],
		preconditions: (_p, { vmid }) => exists(vmid!),
		changesInventory: true,
		summary: (p, { vmid }) => `CT ${vmid} rolled back to ${p.name}${p.start ? ' and started' : ''}`,
		readBack: (p, { vmid }) => (p.start ? [statusIs('CT', vmid!, 'running')] : [])
	}),
	pct_delsnapshot: def({
		classification: 'destructive',
		description: "delete one of a container's snapshots",
		scope: 'ct',
		params: ACTION_PARAMS.pct_delsnapshot,
		steps: (p, { vmid }) => [{ label: `pct delsnapshot ${p.name}`, argv: ['pct', 'delsnapshot', vmid!, p.name], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => exists(vmid!),
		summary: (p, { vmid }) => `snapshot ${p.name} of CT ${vmid} deleted`
	}),
	vzdump: def({
		classification: 'config_mutation',
		description: 'back up one container to a storage with backup content (e.g. local); mode snapshot, suspend or stop; prune: a retention applied after',
		scope: 'ct',
		params: ACTION_PARAMS.vzdump,
		steps: (p, { vmid }) => [
			{
				label: `vzdump to ${p.storage}`,
				argv: [
					'vzdump',
					vmid!,
					'--storage',
					p.storage,
					'--mode',
					p.mode,
					'--compress',
					p.compress,
					...(p.prune ? ['--prune-backups', retentionText(p.prune)] : [])
				],
				timeoutMs: 120 * MIN
			}
		],
		// Refused before approval when the storage clearly has no room for it (proxmox/backup-facts.ts).
		preconditions: (p, { vmid }) => [...exists(vmid!), { kind: 'backup-space', storage: p.storage, vmid: vmid! }],
		// A backup of the guest the storage did not list right before the run (what backup-space read then).
		readBack: (p, { vmid, backupsBefore }) => (backupsBefore ? [newBackup(p.storage, vmid!, backupsBefore)] : [])
	}),
	vm_snapshot: def({
		classification: 'config_mutation',
		description: 'take a snapshot of a VM (disks only, no RAM state)',
		scope: 'host',
		params: ACTION_PARAMS.vm_snapshot,
		steps: (p) => [
			{
				label: `qm snapshot ${p.name}`,
				argv: ['qm', 'snapshot', p.vmid, p.name, ...(p.description !== undefined ? ['--description', p.description] : [])],
				timeoutMs: 10 * MIN
			}
		],
		preconditions: (p) => vmExists(p.vmid),
		summary: (p) => `snapshot ${p.name} of VM ${p.vmid} taken`,
		resume: (p) => resumeToSnapshot('VM', p.vmid, p.name)
	}),
	vm_rollback: def({
		classification: 'destructive',
		description: 'roll a VM back to a snapshot (everything since is lost; a running VM is stopped)',
		scope: 'host',
		params: ACTION_PARAMS.vm_rollback,
		steps: (p) => [{ label: `qm rollback ${p.name}`, argv: ['qm', 'rollback', p.vmid, p.name, ...(p.start ? ['--start', '1'] : [])], timeoutMs: 10 * MIN }],
		preconditions: (p) => vmExists(p.vmid),
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} rolled back to ${p.name}${p.start ? ' and started' : ''}`,
		readBack: (p) => (p.start ? [statusIs('VM', p.vmid, 'running')] : [])
	}),
	vm_delsnapshot: def({
		classification: 'destructive',
		description: "delete one of a VM's snapshots",
		scope: 'host',
		params: ACTION_PARAMS.vm_delsnapshot,
		steps: (p) => [{ label: `qm delsnapshot ${p.name}`, argv: ['qm', 'delsnapshot', p.vmid, p.name], timeoutMs: 10 * MIN }],
		preconditions: (p) => vmExists(p.vmid),
		summary: (p) => `snapshot ${p.name} of VM ${p.vmid} deleted`
	})
};
