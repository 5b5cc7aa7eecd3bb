// Commands and packages inside a container or on the node: a fixed argv, an apt upgrade.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { KERNEL } from '../health-parse';
import { MIN, def, inCt, runningContained } from './def';

/**
 * What a dist-upgrade did, from its output: the packages it set up (dpkg's `Setting up <pkg>
 * (<version>) ...`), and "reboot needed" when a kernel is among them. Never throws: the upgrade
 * ran whatever its output looks like.
 */
export function upgradeDigest(out: string | undefined, where: string): string {
	const set = [...(out ?? '').matchAll(/^Setting up (\S+) \(([^)\s]+)\) \.\.\.$/gm)].map((m) => `${m[1]} ${m[2]}`);
	const counted = /^(\d+) upgraded, (\d+) newly installed/m.exec(out ?? '');
	if (!set.length) return counted ? `${where}: nothing to upgrade (${counted[0]})` : `${where}: dist-upgrade done`;
	const kernels = set.map((s) => s.split(' ')[0]).filter((p) => KERNEL.test(p));
	const shown = set.length > 12 ? [...set.slice(0, 12), `… ${set.length - 12} more`] : set;
	return [
		`${where}: ${set.length} package${set.length === 1 ? '' : 's'} upgraded${counted ? ` (${counted[0]})` : ''}: ${shown.join(', ')}`,
		...(kernels.length ? [`reboot needed: a new kernel (${kernels.join(', ')}) runs only after a reboot`] : [])
	].join('\n');
}

export const EXEC_PACKAGES = {
	pct_exec: def({
		classification: 'config_mutation',
		description: 'run one command (an argv array, no shell) inside a running container',
		scope: 'ct',
		params: ACTION_PARAMS.pct_exec,
		steps: (p, { vmid }) => [{ label: `exec ${p.argv[0]}`, argv: ['pct', 'exec', vmid!, '--', ...p.argv], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => runningContained(vmid!)
	}),
	apt_upgrade: def({
		classification: 'config_mutation',
		description:
			'apt-get update and dist-upgrade on the host (the node: Proxmox says dist-upgrade, never upgrade; snapshot guests first in a plan) or inside a container; says when a new kernel needs a reboot',
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
		preconditions: (_p, { vmid }) => (vmid ? [{ kind: 'ct-status', vmid, status: 'running' }] : []),
		digest: (_p, stdouts) => upgradeDigest(stdouts[1], 'dist-upgrade'),
		// On the node, the API's pending list (recomputed once dpkg's status changed) is empty afterwards.
		readBack: (_p, { vmid }) =>
			vmid
				? []
				: [
						{
							label: 'verify: no pending updates',
							argv: ['pvesh', 'get', '/nodes/localhost/apt/update', '--output-format', 'json'],
							timeoutMs: MIN,
							verify: { none: true, anyExit: true, expect: 'no pending updates', failure: 'updates are still pending on the node' }
						}
					]
	})
};
