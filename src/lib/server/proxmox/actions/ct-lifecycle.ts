// A container's life: created, started, stopped, unlocked, destroyed.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def, exists } from './def';
import { statusIs, configHas, isGone, resumeToStatus } from './read-backs';

export const CT_LIFECYCLE = {
	pct_create: def({
		classification: 'config_mutation',
		description: 'create a new LXC container on the target host',
		scope: 'host',
		params: ACTION_PARAMS.pct_create,
		steps: (p) => {
			const features = Object.entries(p.features)
				.filter(([, on]) => on !== undefined)
				.map(([k, on]) => `${k}=${on ? 1 : 0}`)
				.join(',');
			const net = `name=eth0,bridge=${p.bridge},ip=${p.ip}${p.gateway ? `,gw=${p.gateway}` : ''}`;
			const argv = [
				'pct',
				'create',
				String(p.vmid),
				p.template,
				'--hostname',
				p.hostname,
				'--cores',
				String(p.cores),
				'--memory',
				String(p.memory),
				'--swap',
				String(p.swap),
				'--rootfs',
				`${p.storage}:${p.disk}`,
				'--net0',
				net,
				'--unprivileged',
				p.unprivileged ? '1' : '0',
				...(features ? ['--features', features] : []),
				'--start',
				p.start ? '1' : '0'
			];
			return [{ label: `pct create ${p.vmid} (${p.hostname})`, argv, timeoutMs: 20 * MIN }];
		},
		preconditions: (p) => [{ kind: 'ct-absent', vmid: String(p.vmid) }],
		changesInventory: true,
		summary: (p) => `CT ${p.vmid} (${p.hostname}) created${p.start ? ' and started' : ''}`,
		readBack: (p) => [statusIs('CT', String(p.vmid), p.start ? 'running' : 'stopped')]
	}),
	pct_start: def({
		classification: 'config_mutation',
		description: 'start a stopped container (a failed start reports the cause its task log gives)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_start,
		steps: (_p, { vmid }) => [{ label: 'pct start', argv: ['pct', 'start', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'stopped' }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} started`,
		resume: (_p, { vmid }) => resumeToStatus('CT', vmid!, 'running'),
		readBack: (_p, { vmid }) => [statusIs('CT', vmid!, 'running')],
		failedTask: (_p, { vmid }) => ({ type: 'vzstart', vmid: vmid! })
	}),
	pct_stop: def({
		classification: 'config_mutation',
		description: 'stop a running container (hard stop)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_stop,
		steps: (_p, { vmid }) => [{ label: 'pct stop', argv: ['pct', 'stop', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} stopped`,
		resume: (_p, { vmid }) => resumeToStatus('CT', vmid!, 'stopped'),
		readBack: (_p, { vmid }) => [statusIs('CT', vmid!, 'stopped')]
	}),
	pct_unlock: def({
		classification: 'config_mutation',
		description: "remove a container's lock (e.g. 'create' left by an interrupted pct create) so it can be destroyed or started",
		scope: 'ct',
		params: ACTION_PARAMS.pct_unlock,
		steps: (_p, { vmid }) => [{ label: 'pct unlock', argv: ['pct', 'unlock', vmid!], timeoutMs: 1 * MIN }],
		preconditions: (_p, { vmid }) => exists(vmid!),
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} unlocked`,
		readBack: (_p, { vmid }) => configHas('CT', vmid!, { lock: null }, 'no lock')
	}),
	pct_destroy: def({
		classification: 'destructive',
		description: 'destroy a container and its disks (it must be stopped first)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_destroy,
		steps: (_p, { vmid }) => [{ label: 'pct destroy', argv: ['pct', 'destroy', vmid!, '--purge'], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-exists', vmid: vmid! }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} destroyed`,
		readBack: (_p, { vmid }) => [isGone('CT', vmid!)]
	})
};
