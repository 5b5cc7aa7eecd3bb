// Read-only looks at one guest: a container's or a VM's status and config, and a VM's guest agent.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def, vmRunning } from './def';

export const READS = {
	pct_status: def({
		classification: 'read_only',
		description: 'status of one container',
		scope: 'ct',
		params: ACTION_PARAMS.pct_status,
		steps: (_p, { vmid }) => [{ label: 'pct status', argv: ['pct', 'status', vmid!], timeoutMs: MIN }]
	}),
	pct_config: def({
		classification: 'read_only',
		description: 'configuration of one container',
		scope: 'ct',
		params: ACTION_PARAMS.pct_config,
		steps: (_p, { vmid }) => [{ label: 'pct config', argv: ['pct', 'config', vmid!], timeoutMs: MIN }]
	}),
	qm_status: def({
		classification: 'read_only',
		description: 'status of one VM (qm status; target the host, vmid in params)',
		scope: 'host',
		params: ACTION_PARAMS.qm_status,
		steps: (p) => [{ label: 'qm status', argv: ['qm', 'status', p.vmid, '--verbose'], timeoutMs: MIN }]
	}),
	vm_config: def({
		classification: 'read_only',
		description: 'configuration of one VM (qm config)',
		scope: 'host',
		params: ACTION_PARAMS.vm_config,
		steps: (p) => [{ label: 'qm config', argv: ['qm', 'config', p.vmid], timeoutMs: MIN }]
	}),
	vm_guest: def({
		classification: 'read_only',
		description: "ask a running VM's guest agent: ping (does it answer) or network-get-interfaces (its IPs)",
		scope: 'host',
		params: ACTION_PARAMS.vm_guest,
		steps: (p) => [{ label: `guest ${p.cmd}`, argv: ['qm', 'guest', 'cmd', p.vmid, p.cmd], timeoutMs: MIN }],
		preconditions: (p) => vmRunning(p.vmid)
	})
};
