// Moving a guest to another node of the cluster.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def } from './def';
import { onNode } from './read-backs';

export const MIGRATION = {
	pct_migrate: def({
		classification: 'config_mutation',
		description: 'move a container to another cluster node (a running one in restart mode: shut down, moved, started there)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_migrate,
		steps: (p, { vmid }) => [
			{
				label: `pct migrate → ${p.node}`,
				argv: ['pct', 'migrate', vmid!, p.node, '--restart', '1', '--timeout', String(p.timeoutS)],
				timeoutMs: (p.timeoutS + 60) * 1000 + 60 * MIN
			},
			onNode('lxc', vmid!, p.node)
		],
		preconditions: (p, { vmid }) => [{ kind: 'migrate-target', guest: 'ct', vmid: vmid!, node: p.node }],
		changesInventory: true,
		summary: (p, { vmid }) => `CT ${vmid} migrated to ${p.node}`
	}),
	qm_migrate: def({
		classification: 'config_mutation',
		description: 'move a VM to another cluster node: online (live) for a running VM; local disks are copied only with withLocalDisks',
		scope: 'host',
		params: ACTION_PARAMS.qm_migrate,
		steps: (p) => [
			{
				label: `qm migrate → ${p.node}`,
				argv: ['qm', 'migrate', p.vmid, p.node, ...(p.online ? ['--online', '1'] : []), ...(p.withLocalDisks ? ['--with-local-disks', '1'] : [])],
				timeoutMs: 120 * MIN
			},
			onNode('qemu', p.vmid, p.node)
		],
		preconditions: (p) => [{ kind: 'migrate-target', guest: 'vm', vmid: p.vmid, node: p.node, online: p.online, withLocalDisks: p.withLocalDisks }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} migrated to ${p.node}${p.online ? ' (online)' : ''}`
	})
};
