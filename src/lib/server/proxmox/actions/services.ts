// systemd units on the host or in a container: their status, starting and stopping them, a container's restart.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def, inCt, running } from './def';
import { statusIs, unitIs } from './read-backs';

export const SERVICES = {
	service_status: def({
		classification: 'read_only',
		description: 'systemctl status of a unit on the host or inside a container',
		scope: 'host-or-ct',
		params: ACTION_PARAMS.service_status,
		steps: (p, { vmid }) => [{ label: `status ${p.unit}`, argv: inCt(vmid, ['systemctl', 'status', '--no-pager', p.unit]), timeoutMs: MIN }]
	}),
	restart: def({
		classification: 'config_mutation',
		description: 'reboot a running container',
		scope: 'ct',
		params: ACTION_PARAMS.restart,
		steps: (_p, { vmid }) => [{ label: 'pct reboot', argv: ['pct', 'reboot', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }],
		readBack: (_p, { vmid }) => [statusIs('CT', vmid!, 'running')]
	}),
	systemctl: def({
		classification: 'config_mutation',
		description: 'start/stop/restart/reload/enable/disable a systemd unit on the host or inside a container',
		scope: 'host-or-ct',
		params: ACTION_PARAMS.systemctl,
		steps: (p, { vmid }) => [{ label: `systemctl ${p.op} ${p.unit}`, argv: inCt(vmid, ['systemctl', p.op, p.unit]), timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => (vmid ? [{ kind: 'ct-status', vmid, status: 'running' }] : []),
		readBack: (p, { vmid }) => unitIs(vmid, p.op, p.unit)
	}),
	ct_service_active: def({
		classification: 'read_only',
		description: 'whether a systemd unit inside a running container is active (systemctl is-active); fails when it is not',
		scope: 'ct',
		params: ACTION_PARAMS.ct_service_active,
		steps: (p, { vmid }) => [{ label: `is-active ${p.unit}`, argv: ['pct', 'exec', vmid!, '--', 'systemctl', 'is-active', p.unit], timeoutMs: MIN }],
		preconditions: (_p, { vmid }) => running(vmid!)
	})
};
