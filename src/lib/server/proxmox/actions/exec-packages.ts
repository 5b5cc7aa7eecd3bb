// Commands and packages inside a container: a fixed argv, an apt upgrade.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def, inCt } from './def';

export const EXEC_PACKAGES = {
	pct_exec: def({
		classification: 'config_mutation',
		description: 'run one command (an argv array, no shell) inside a running container',
		scope: 'ct',
		params: ACTION_PARAMS.pct_exec,
		steps: (p, { vmid }) => [{ label: `exec ${p.argv[0]}`, argv: ['pct', 'exec', vmid!, '--', ...p.argv], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }]
	}),
	apt_upgrade: def({
		classification: 'config_mutation',
		description: 'apt-get update and dist-upgrade on the host or inside a container',
		scope: 'host-or-ct',
		params: ACTION_PARAMS.apt_upgrade,
		steps: (_p, { vmid }) => [
			{ label: 'apt-get update', argv: inCt(vmid, ['apt-get', 'update']), timeoutMs: 10 * MIN },
			{
				label: 'apt-get dist-upgrade',
				argv: inCt(vmid, ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', '-y', '-o', 'Dpkg::Options::=--force-confold', 'dist-upgrade']),
				timeoutMs: 30 * MIN
			}
		],
		preconditions: (_p, { vmid }) => (vmid ? [{ kind: 'ct-status', vmid, status: 'running' }] : [])
	})
};
