// The read-backs (`readBack`, and what a `resume` reads): one read of the host each, judged by its `verify`.
import { MIN, inCt, type Resume, type Step } from './def';
import { backupListArgv } from '../backup-facts';

export const statusIs = (guest: 'CT' | 'VM', vmid: string, status: 'running' | 'stopped'): Step => ({
	label: `verify: ${guest} ${vmid} ${status}`,
	argv: [guest === 'CT' ? 'pct' : 'qm', 'status', vmid],
	timeoutMs: MIN,
	verify: { field: 'status', expect: status, failure: `${guest} ${vmid} is not ${status}` }
});
export const configHas = (guest: 'CT' | 'VM', vmid: string, fields: Record<string, string | null>, what: string): Step[] =>
	Object.keys(fields).length
		? [
				{
					label: `verify: ${what}`,
					argv: [guest === 'CT' ? 'pct' : 'qm', 'config', vmid],
					timeoutMs: MIN,
					verify: { fields, expect: what, failure: `${guest} ${vmid}'s config does not show ${what}` }
				}
			]
		: [];
export const isGone = (guest: 'CT' | 'VM', vmid: string): Step => ({
	label: `verify: ${guest} ${vmid} gone`,
	argv: [guest === 'CT' ? 'pct' : 'qm', 'status', vmid],
	timeoutMs: MIN,
	verify: { gone: true, expect: 'does not exist', failure: `${guest} ${vmid} still exists` }
});
/** The settings a `pct set` / `qm set` asked for, as its config shows them (the description is stored encoded: not compared). */
export const settings = (p: Record<string, unknown>, keys: string[]): Record<string, string> =>
	Object.fromEntries(keys.filter((k) => p[k] !== undefined).map((k) => [k, typeof p[k] === 'boolean' ? (p[k] ? '1' : '0') : String(p[k])]));
export const shown = (f: Record<string, string | null>) =>
	Object.entries(f)
		.map(([k, v]) => (v === null ? `no ${k}` : `${k} ${v}`))
		.join(', ');
/** An absolute size is read back in the disk's line; a relative one (`+2G`) cannot be told from the config alone. */
export const sizeIs = (guest: 'CT' | 'VM', vmid: string, disk: string, size: string): Step[] =>
	size.startsWith('+') ? [] : configHas(guest, vmid, { [disk]: `size=${size}` }, `${disk} size=${size}`);
export const unitIs = (vmid: string | undefined, op: string, unit: string): Step[] => {
	const [check, expect] = ['start', 'restart', 'reload'].includes(op)
		? ['is-active', 'active']
		: op === 'stop'
			? ['is-active', 'inactive']
			: op === 'enable'
				? ['is-enabled', 'enabled']
				: ['is-enabled', 'disabled'];
	const where = vmid ? ` in CT ${vmid}` : '';
	return [
		{
			label: `verify: ${unit} ${expect}${where}`,
			argv: inCt(vmid, ['systemctl', check, unit]),
			timeoutMs: MIN,
			verify: { expect, anyExit: true, failure: `${unit} is not ${expect}${where}` }
		}
	];
};

/** A resume that reads a guest's status (`pct|qm status`): in place when it is `status`. */
export const resumeToStatus = (guest: 'CT' | 'VM', vmid: string, status: 'running' | 'stopped'): Resume => {
	const tool = guest === 'CT' ? 'pct' : 'qm';
	return {
		state: {
			label: `read back: ${tool} status ${vmid}`,
			argv: [tool, 'status', vmid],
			timeoutMs: MIN,
			verify: { field: 'status', expect: status, failure: `${guest} ${vmid} is not ${status}` }
		},
		config: [tool, 'config', vmid]
	};
};
/** A resume of a snapshot: in place when `pct|qm listsnapshot` lists it (taken again only when it is not). */
export const resumeToSnapshot = (guest: 'CT' | 'VM', vmid: string, name: string): Resume => {
	const tool = guest === 'CT' ? 'pct' : 'qm';
	return {
		state: {
			label: `read back: ${tool} listsnapshot ${vmid}`,
			argv: [tool, 'listsnapshot', vmid],
			timeoutMs: MIN,
			verify: { snapshot: true, expect: name, failure: `${guest} ${vmid} has no snapshot ${name}` }
		},
		config: [tool, 'config', vmid]
	};
};

/** The read-back after a migration: the cluster lists the guest on the target node. */
export const onNode = (type: 'lxc' | 'qemu', vmid: string, node: string): Step => ({
	label: `verify: ${type}/${vmid} on ${node}`,
	argv: ['pvesh', 'get', '/cluster/resources', '--type', 'vm', '--output-format', 'json'],
	timeoutMs: MIN,
	verify: {
		json: { id: `${type}/${vmid}`, key: 'node' },
		expect: node,
		failure: `the migration reported success but the cluster does not list ${type}/${vmid} on ${node}`
	}
});

/** The read-back of backups that must be gone from a storage (a list that cannot be read is no answer). */
export const backupsGone = (storage: string, vmid: string | undefined, volids: string[]): Step => ({
	label: `verify: ${volids.length === 1 ? volids[0] : `${volids.length} backups`} gone from ${storage}`,
	argv: backupListArgv(storage, vmid),
	timeoutMs: MIN,
	verify: { backups: { gone: volids }, anyExit: true, expect: `${volids.length} gone`, failure: `not every removed backup is gone from ${storage}` }
});

/** The read-back after a vzdump: a backup of the guest on the storage that was not there before the run. */
export const newBackup = (storage: string, vmid: string, before: string[]): Step => ({
	label: `verify: a new backup of ${vmid} on ${storage}`,
	argv: backupListArgv(storage, vmid),
	timeoutMs: MIN,
	verify: { backups: { newOf: { vmid, before } }, anyExit: true, expect: 'a new backup', failure: `no new backup of guest ${vmid} is listed on ${storage}` }
});
