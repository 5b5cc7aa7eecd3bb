// A guest's settings and disks: pct set / qm set, and growing a disk.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def, exists, vmExists } from './def';
import { configHas, settings, shown, sizeIs } from './read-backs';

export const GUEST_CONFIG = {
	pct_set: def({
		classification: 'config_mutation',
		description: "change a container's cores, memory (MiB), swap (MiB), onboot or description",
		scope: 'ct',
		params: ACTION_PARAMS.pct_set,
		steps: (p, { vmid }) => {
			const opts = [
				...(p.cores !== undefined ? ['--cores', String(p.cores)] : []),
				...(p.memory !== undefined ? ['--memory', String(p.memory)] : []),
				...(p.swap !== undefined ? ['--swap', String(p.swap)] : []),
				...(p.onboot !== undefined ? ['--onboot', p.onboot ? '1' : '0'] : []),
				...(p.description !== undefined ? ['--description', p.description] : [])
			];
			return [{ label: 'pct set', argv: ['pct', 'set', vmid!, ...opts], timeoutMs: MIN }];
		},
		preconditions: (_p, { vmid }) => exists(vmid!),
		changesInventory: true,
		summary: (p, { vmid }) =>
			`CT ${vmid} set: ${(['cores', 'memory', 'swap', 'onboot'] as const)
				.filter((k) => p[k] !== undefined)
				.map((k) => `${k}=${String(p[k])}`)
				.concat(p.description !== undefined ? ['description'] : [])
				.join(', ')}`,
		readBack: (p, { vmid }) => {
			const f = settings(p, ['cores', 'memory', 'swap', 'onboot']);
			return configHas('CT', vmid!, f, shown(f));
		}
	}),
	pct_resize: def({
		classification: 'config_mutation',
		description: "grow a container disk (rootfs or mpN): size '+2G' grows by 2 GiB, '16G' is the new total; shrinking is refused",
		scope: 'ct',
		irreversible: true,
		params: ACTION_PARAMS.pct_resize,
		steps: (p, { vmid }) => [{ label: `pct resize ${p.disk} ${p.size}`, argv: ['pct', 'resize', vmid!, p.disk, p.size], timeoutMs: 10 * MIN }],
		preconditions: (p, { vmid }) => [{ kind: 'ct-disk-grows', vmid: vmid!, disk: p.disk, size: p.size }],
		changesInventory: true,
		summary: (p, { vmid }) => `CT ${vmid} ${p.disk} ${p.size.startsWith('+') ? `grown by ${p.size.slice(1)}` : `grown to ${p.size}`}`,
		readBack: (p, { vmid }) => sizeIs('CT', vmid!, p.disk, p.size)
	}),
	vm_set: def({
		classification: 'config_mutation',
		description: "change a VM's cores, memory, balloon (MiB, 0 = off), onboot, tags or description",
		scope: 'host',
		params: ACTION_PARAMS.vm_set,
		steps: (p) => {
			const opts = [
				...(p.cores !== undefined ? ['--cores', String(p.cores)] : []),
				...(p.memory !== undefined ? ['--memory', String(p.memory)] : []),
				...(p.balloon !== undefined ? ['--balloon', String(p.balloon)] : []),
				...(p.onboot !== undefined ? ['--onboot', p.onboot ? '1' : '0'] : []),
				...(p.tags !== undefined ? ['--tags', p.tags.join(';')] : []),
				...(p.description !== undefined ? ['--description', p.description] : [])
			];
			return [{ label: 'qm set', argv: ['qm', 'set', p.vmid, ...opts], timeoutMs: MIN }];
		},
		preconditions: (p) => vmExists(p.vmid),
		changesInventory: true,
		summary: (p) =>
			`VM ${p.vmid} set: ${(['cores', 'memory', 'balloon', 'onboot'] as const)
				.filter((k) => p[k] !== undefined)
				.map((k) => `${k}=${String(p[k])}`)
				.concat(p.tags !== undefined ? [`tags=${p.tags.join(';')}`] : [], p.description !== undefined ? ['description'] : [])
				.join(', ')}`,
		readBack: (p) => {
			const f = settings(p, ['cores', 'memory', 'balloon', 'onboot']);
			return configHas('VM', p.vmid, f, shown(f));
		}
	}),
	vm_resize: def({
		classification: 'config_mutation',
		description: "grow a VM disk: size '+8G' grows by 8 GiB, '40G' is the new total; shrinking is refused",
		scope: 'host',
		irreversible: true,
		params: ACTION_PARAMS.vm_resize,
		steps: (p) => [{ label: `qm resize ${p.disk} ${p.size}`, argv: ['qm', 'resize', p.vmid, p.disk, p.size], timeoutMs: 10 * MIN }],
		preconditions: (p) => [{ kind: 'vm-disk-grows', vmid: p.vmid, disk: p.disk, size: p.size }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} ${p.disk} ${p.size.startsWith('+') ? `grown by ${p.size.slice(1)}` : `grown to ${p.size}`}`,
		readBack: (p) => sizeIs('VM', p.vmid, p.disk, p.size)
	})
};
