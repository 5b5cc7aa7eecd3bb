// A VM's life: started, stopped, created, cloned, made a template, shut down, rebooted, unlocked, destroyed.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def, vmExists, vmRunning } from './def';
import { statusIs, configHas, isGone, resumeToStatus } from './read-backs';

/**
 * vm_create's ssh keys: stdin goes to a private temp file, then the qm argv (the positional
 * arguments, never spliced into this script) runs with `--sshkeys <that file>` appended.
 */
export const SSHKEYS_SCRIPT = `set -e; t=$(mktemp /tmp/nomos-keys.XXXXXXXX); trap 'rm -f "$t"' EXIT; cat > "$t"; "$@" --sshkeys "$t"`;

export const VM_LIFECYCLE = {
	qm_start: def({
		classification: 'config_mutation',
		description: 'start a stopped VM (target the host, vmid in params)',
		scope: 'host',
		params: ACTION_PARAMS.qm_start,
		steps: (p) => [{ label: 'qm start', argv: ['qm', 'start', p.vmid], timeoutMs: 5 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'stopped' }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} started`,
		resume: (p) => resumeToStatus('VM', p.vmid, 'running'),
		readBack: (p) => [statusIs('VM', p.vmid, 'running')],
		failedTask: (p) => ({ type: 'qmstart', vmid: p.vmid })
	}),
	qm_stop: def({
		classification: 'config_mutation',
		description: 'stop a running VM, hard (target the host, vmid in params)',
		scope: 'host',
		params: ACTION_PARAMS.qm_stop,
		steps: (p) => [{ label: 'qm stop', argv: ['qm', 'stop', p.vmid], timeoutMs: 5 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'running' }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} stopped`,
		resume: (p) => resumeToStatus('VM', p.vmid, 'stopped'),
		readBack: (p) => [statusIs('VM', p.vmid, 'stopped')]
	}),
	vm_create: def({
		classification: 'config_mutation',
		description: 'create a VM from a cloud image (imported as scsi0) with cloud-init (user, ssh keys, ip), serial console and guest agent',
		scope: 'host',
		params: ACTION_PARAMS.vm_create,
		steps: (p) => {
			const id = String(p.vmid);
			const create = [
				'qm',
				'create',
				id,
				'--name',
				p.name,
				'--memory',
				String(p.memory),
				'--cores',
				String(p.cores),
				'--net0',
				`virtio,bridge=${p.bridge}`,
				'--scsihw',
				'virtio-scsi-pci',
				'--scsi0',
				`${p.storage}:0,import-from=${p.image}`,
				'--ide2',
				`${p.storage}:cloudinit`,
				'--boot',
				'order=scsi0',
				'--serial0',
				'socket',
				'--vga',
				'serial0',
				'--agent',
				'enabled=1',
				...(p.ciuser !== undefined ? ['--ciuser', p.ciuser] : []),
				'--ipconfig0',
				p.ip === 'dhcp' ? 'ip=dhcp' : `ip=${p.ip}${p.gateway ? `,gw=${p.gateway}` : ''}`
			];
			const label = `qm create ${id} (${p.name})`;
			return [
				p.sshKeys !== undefined
					? { label, argv: ['sh', '-c', SSHKEYS_SCRIPT, 'nomos-keys', ...create], stdin: p.sshKeys.trim() + '\n', timeoutMs: 30 * MIN }
					: { label, argv: create, timeoutMs: 30 * MIN },
				...(p.start ? [{ label: `qm start ${id}`, argv: ['qm', 'start', id], timeoutMs: 5 * MIN }] : [])
			];
		},
		preconditions: (p) => [{ kind: 'vm-absent', vmid: String(p.vmid) }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} (${p.name}) created from ${p.image}${p.start ? ' and started' : ''}`,
		readBack: (p) => [statusIs('VM', String(p.vmid), p.start ? 'running' : 'stopped')]
	}),
	vm_clone: def({
		classification: 'config_mutation',
		description: 'clone a VM or template to a new VM (full copy by default; full=false is a linked clone of a template)',
		scope: 'host',
		params: ACTION_PARAMS.vm_clone,
		steps: (p) => [
			{
				label: `qm clone ${p.vmid} → ${p.newid} (${p.name})`,
				argv: ['qm', 'clone', p.vmid, String(p.newid), '--name', p.name, '--full', p.full ? '1' : '0'],
				timeoutMs: 60 * MIN
			}
		],
		preconditions: (p) => [...vmExists(p.vmid), { kind: 'vm-absent', vmid: String(p.newid) }],
		changesInventory: true,
		summary: (p) => `VM ${p.newid} (${p.name}) cloned from ${p.vmid}${p.full ? '' : ' (linked)'}`,
		readBack: (p) => [statusIs('VM', String(p.newid), 'stopped')]
	}),
	vm_template: def({
		classification: 'config_mutation',
		description: 'turn a stopped VM into a template (it can then only be cloned, never started again)',
		scope: 'host',
		irreversible: true,
		params: ACTION_PARAMS.vm_template,
		steps: (p) => [{ label: 'qm template', argv: ['qm', 'template', p.vmid], timeoutMs: 10 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'stopped' }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} is now a template`,
		readBack: (p) => configHas('VM', p.vmid, { template: '1' }, 'template 1')
	}),
	vm_shutdown: def({
		classification: 'config_mutation',
		description: 'clean shutdown of a running VM (ACPI); fails after timeoutS if the guest does not power off (then ask about qm_stop)',
		scope: 'host',
		params: ACTION_PARAMS.vm_shutdown,
		steps: (p) => [{ label: 'qm shutdown', argv: ['qm', 'shutdown', p.vmid, '--timeout', String(p.timeoutS)], timeoutMs: (p.timeoutS + 60) * 1000 }],
		preconditions: (p) => vmRunning(p.vmid),
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} shut down`,
		readBack: (p) => [statusIs('VM', p.vmid, 'stopped')]
	}),
	vm_reboot: def({
		classification: 'config_mutation',
		description: 'clean reboot of a running VM (shutdown, then start)',
		scope: 'host',
		params: ACTION_PARAMS.vm_reboot,
		steps: (p) => [{ label: 'qm reboot', argv: ['qm', 'reboot', p.vmid, '--timeout', String(p.timeoutS)], timeoutMs: (p.timeoutS + 120) * 1000 }],
		preconditions: (p) => vmRunning(p.vmid),
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} rebooted`,
		readBack: (p) => [statusIs('VM', p.vmid, 'running')]
	}),
	vm_destroy: def({
		classification: 'destructive',
		description: 'destroy a stopped VM and its disks, and remove it from backup/replication/HA jobs',
		scope: 'host',
		params: ACTION_PARAMS.vm_destroy,
		steps: (p) => [{ label: 'qm destroy', argv: ['qm', 'destroy', p.vmid, '--purge'], timeoutMs: 10 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'stopped' }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} destroyed`,
		readBack: (p) => [isGone('VM', p.vmid)]
	}),
	vm_unlock: def({
		classification: 'config_mutation',
		description: "remove a VM's lock (e.g. left by an interrupted backup, clone or snapshot)",
		scope: 'host',
		params: ACTION_PARAMS.vm_unlock,
		steps: (p) => [{ label: 'qm unlock', argv: ['qm', 'unlock', p.vmid], timeoutMs: MIN }],
		preconditions: (p) => vmExists(p.vmid),
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} unlocked`,
		readBack: (p) => configHas('VM', p.vmid, { lock: null }, 'no lock')
	})
};
