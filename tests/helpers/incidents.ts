// Issue #45's five incidents as scripts, shared by their integration tests
// (tests/integration/incident-backup.test.ts, incidents-node.test.ts), incident (a)'s browser spec
// (tests/e2e/incident-backup.spec.ts) and `npm run bench:tokens`:
// the guests each needs on node `strong`, the fault it puts on the SSH double, how it starts (a
// Proxmox VE webhook, an Alertmanager POST or one chat message) and the scripted model's side of
// it — the reads, the one plan, and the reply after the plan. The assertions stay in the tests.
import type { ScriptedResponse } from '../doubles/llm/types';
import { GiB, type BackupVolume } from '../doubles/proxmox/health';
import type { NodeState } from '../doubles/proxmox/server';
import type { SeedCt } from '../doubles/proxmox/state';

export type IncidentStart = { chat: string } | { hook: 'proxmox' | 'alertmanager'; alert: Record<string, unknown> };

export interface Incident {
	/** The bench's scenario name (`npm run bench:tokens -- --only <name>`). */
	name: string;
	/** The letter and words for it. */
	label: string;
	/** The CTs on `strong` the incident is about (the tests seed them; the bench adds the missing ones). */
	guests: SeedCt[];
	/** Puts the fault on the double (its state dir: a spec reaches it with nodeStateIn); what it answers (a task's UPID) is what the script needs. */
	setup(pve: NodeState): Promise<string | undefined>;
	start: IncidentStart;
	/** The model's answers up to and including the plan, given what `setup` answered. */
	script(fromSetup: string | undefined): ScriptedResponse[];
	/** The model's reply once the approved plan has run. */
	reply: ScriptedResponse;
}

const call = (name: string, args: unknown): ScriptedResponse => ({ toolCalls: [{ name, args }] });
/** A read through request_execution, with the reason the node incidents give. */
const rx = (target: string, action: string, params: Record<string, unknown> = {}) =>
	call('request_execution', { target, action, params, reason: `read ${action}` });
const plan = (title: string, steps: Array<{ action: string; target: string; params: Record<string, unknown>; why: string }>) =>
	call('propose_plan', { title, steps });
export const epochOf = (iso: string) => Math.floor(Date.parse(iso) / 1000);

/** (a): the backups of CT 101 on `local`, one a day from 2026-12-01. */
export const backupVolid = (day: number) => `local:backup/vzdump-lxc-101-2026_12_0${day}-02_00_00.tar.zst`;
const backupOf = (day: number): BackupVolume => ({
	volid: backupVolid(day),
	vmid: 101,
	subtype: 'lxc',
	size: 2 * GiB,
	ctime: epochOf(`2026-12-0${day}T02:00:00Z`)
});
const readBackup = (action: string, params: Record<string, unknown>) =>
	call('request_execution', { target: 'strong', action, params, reason: 'why the backup of CT 101 failed' });

export const INCIDENT_A = {
	name: 'backup',
	label: '(a) backup failed, no space',
	guests: [{ vmid: 101, hostname: 'media', status: 'running' }],
	async setup(pve) {
		await pve.setHealth({ backups: { local: [1, 2, 3, 4].map(backupOf) } });
		await pve.fill('local', 0.999, 100 * GiB);
		return undefined;
	},
	start: {
		hook: 'proxmox',
		alert: {
			title: 'vzdump backup status (strong): backup failed',
			message: 'vzdump backup of CT 101 failed: No space left on device',
			severity: 'error',
			timestamp: 1796160000,
			fields: { type: 'vzdump', hostname: 'strong', 'job-id': 'backup-nightly' }
		}
	},
	// Three reads, then one plan: the prune the dry run listed, and the backup again.
	script: () => [
		readBackup('storage_status', {}),
		readBackup('backup_list', { storage: 'local', vmid: 101 }),
		readBackup('backup_prune_preview', { storage: 'local', vmid: 101, keep: { last: 2 } }),
		plan('Free space on local and back up CT 101 again', [
			{
				action: 'backup_prune',
				target: 'strong',
				params: { storage: 'local', vmid: 101, keep: { last: 2 }, remove: [backupVolid(1), backupVolid(2)] },
				why: 'local is full: the dry run of keep-last=2 removes the two oldest backups of CT 101 (4 GiB)'
			},
			{ action: 'vzdump', target: 'lxc:strong/101', params: { storage: 'local' }, why: 'the failed backup, again, once there is room' }
		])
	],
	reply: { text: 'Pruned the two oldest backups of CT 101 on local and backed it up again: the new backup is on local.' }
} satisfies Incident;

export const INCIDENT_B = {
	name: 'storage',
	label: '(b) storage over 90 %',
	guests: [{ vmid: 104, hostname: 'oldmedia', status: 'stopped', diskGb: 500 }],
	async setup(pve) {
		await pve.fill('local-lvm', 0.93, 400 * GiB);
		return undefined;
	},
	start: {
		hook: 'alertmanager',
		alert: {
			version: '4',
			groupKey: '{}:{alertname="PveStorageAlmostFull"}',
			status: 'firing',
			receiver: 'nomos',
			groupLabels: { alertname: 'PveStorageAlmostFull' },
			commonLabels: { alertname: 'PveStorageAlmostFull', severity: 'warning', id: 'storage/strong/local-lvm' },
			commonAnnotations: { summary: 'local-lvm on strong is over 90 % full' },
			externalURL: 'http://am',
			alerts: [
				{
					status: 'firing',
					labels: { alertname: 'PveStorageAlmostFull', id: 'storage/strong/local-lvm' },
					annotations: {},
					startsAt: '2026-12-06T20:00:00Z',
					fingerprint: 'lvm1'
				}
			]
		}
	},
	script: () => [
		rx('strong', 'storage_status'),
		rx('strong', 'storage_content', { storage: 'local-lvm', limit: 5 }),
		rx('strong/104', 'pct_status'),
		plan('Free local-lvm: back up and remove the stopped CT 104 (oldmedia)', [
			{ action: 'vzdump', target: 'strong/104', params: { storage: 'local' }, why: 'a copy to restore from' },
			{ action: 'pct_destroy', target: 'strong/104', params: {}, why: 'its 500 GiB disk holds 90 GiB of local-lvm; it is stopped' }
		])
	],
	reply: { text: 'local-lvm is at 70 % now; CT 104 is backed up on local.' }
} satisfies Incident;

/** (c): the nightly backup's task log, interrupted while CT 101 was stopped (it left `lock: backup`). */
export const VZDUMP_LOG = [
	'INFO: starting new backup job: vzdump 101 --mode stop --storage local --compress zstd',
	'INFO: Starting Backup of VM 101 (lxc)',
	'INFO: Backup started at 2026-12-06 02:00:04',
	'INFO: stopping virtual guest',
	"INFO: creating vzdump archive '/var/lib/vz/dump/vzdump-lxc-101-2026_12_06-02_00_04.tar.zst'",
	"ERROR: Backup of VM 101 failed - command 'set -o pipefail && lxc-usernsexec … tar cpf - …' failed: interrupted by signal",
	'INFO: Failed at 2026-12-06 02:03:41',
	'INFO: Backup job finished with errors',
	'TASK ERROR: job errors'
];

export const INCIDENT_C = {
	name: 'start',
	label: '(c) CT does not start',
	guests: [{ vmid: 101, hostname: 'db', status: 'stopped', lock: 'backup' }],
	async setup(pve) {
		await pve.patchCt(101, { status: 'stopped', lock: 'backup', startedAt: undefined });
		return pve.addTask({ type: 'vzdump', id: '101', starttime: epochOf('2026-12-06T02:00:00Z'), status: 'job errors', log: VZDUMP_LOG });
	},
	start: { chat: 'CT 101 (db) will not start since last night. Find out why and fix it.' },
	script: (upid) => [
		rx('strong/101', 'pct_status'),
		rx('strong', 'tasks_failed', { limit: 5 }),
		rx('strong', 'task_log', { upid }),
		rx('strong/101', 'pct_config'),
		plan('Unlock CT 101 and start it', [
			{ action: 'pct_unlock', target: 'strong/101', params: {}, why: 'the interrupted backup left lock: backup' },
			{ action: 'pct_start', target: 'strong/101', params: {}, why: 'start it again' }
		])
	],
	reply: { text: 'CT 101 is unlocked and running again.' }
} satisfies Incident;

const pkg = (Package: string, OldVersion: string, Version: string) => ({ Package, OldVersion, Version, Origin: 'Proxmox' });

export const INCIDENT_D = {
	name: 'updates',
	label: '(d) node updates pending',
	guests: [
		{ vmid: 100, hostname: 'caddy', status: 'running' },
		{ vmid: 105, hostname: 'web', status: 'running' }
	],
	async setup(pve) {
		// The daily list shows one update; a refresh finds three, a new kernel among them.
		await pve.setHealth({
			apt: [pkg('pve-manager', '8.3.2', '8.3.3')],
			aptRepo: [pkg('pve-manager', '8.3.2', '8.3.3'), pkg('proxmox-kernel-6.8', '6.8.12-5', '6.8.12-6'), pkg('libpve-common-perl', '8.2.9', '8.3.0')]
		});
		return undefined;
	},
	start: {
		hook: 'proxmox',
		alert: {
			title: 'New software packages available (strong)',
			message: 'The following updates are available: pve-manager',
			severity: 'info',
			timestamp: epochOf('2026-12-06T05:00:00Z'),
			fields: { type: 'package-updates', hostname: 'strong' }
		}
	},
	script: () => [
		rx('strong', 'node_apt_refresh'),
		plan('Upgrade strong, snapshots first', [
			{ action: 'pct_snapshot', target: 'strong/100', params: { name: 'preupgrade' }, why: 'a way back for caddy' },
			{ action: 'pct_snapshot', target: 'strong/105', params: { name: 'preupgrade' }, why: 'a way back for web' },
			{ action: 'apt_upgrade', target: 'strong', params: {}, why: 'install the 3 pending updates (a new kernel among them)' }
		])
	],
	reply: { text: 'strong is up to date; it needs a reboot to run the new kernel.' }
} satisfies Incident;

export const INCIDENT_E = {
	name: 'service',
	label: '(e) service in a CT down',
	guests: [{ vmid: 105, hostname: 'web', status: 'running' }],
	async setup(pve) {
		await pve.setService('caddy', { active: false }, 105);
		await pve.addJournal(
			'caddy',
			[
				'Dec 06 21:12:40 web caddy[311]: {"level":"error","msg":"unable to renew certificate","error":"context deadline exceeded"}',
				'Dec 06 21:12:41 web systemd[1]: caddy.service: Main process exited, code=killed, status=9/KILL',
				"Dec 06 21:12:41 web systemd[1]: caddy.service: Failed with result 'oom-kill'."
			],
			105
		);
		return undefined;
	},
	start: {
		hook: 'alertmanager',
		alert: {
			version: '4',
			groupKey: '{}:{alertname="CaddyDown"}',
			status: 'firing',
			receiver: 'nomos',
			groupLabels: { alertname: 'CaddyDown' },
			commonLabels: { alertname: 'CaddyDown', severity: 'critical', instance: 'ct105:443' },
			commonAnnotations: { summary: 'caddy on CT 105 (web) is down' },
			externalURL: 'http://am',
			alerts: [
				{
					status: 'firing',
					labels: { alertname: 'CaddyDown', instance: 'ct105:443' },
					annotations: {},
					startsAt: '2026-12-06T21:13:00Z',
					fingerprint: 'c105'
				}
			]
		}
	},
	script: () => [
		rx('strong/105', 'service_status', { unit: 'caddy.service' }),
		rx('strong/105', 'journal_tail', { unit: 'caddy.service', lines: 30 }),
		plan('Restart caddy on CT 105', [
			{ action: 'systemctl', target: 'strong/105', params: { unit: 'caddy.service', op: 'restart' }, why: 'it was OOM-killed' },
			{ action: 'ct_service_active', target: 'strong/105', params: { unit: 'caddy.service' }, why: 'make sure it stays up' }
		])
	],
	reply: { text: 'caddy on CT 105 is running again.' }
} satisfies Incident;

/** In the order. */
export const INCIDENTS: Incident[] = [INCIDENT_A, INCIDENT_B, INCIDENT_C, INCIDENT_D, INCIDENT_E];
