// The homelab's real incidents (issue #45): a CT that will not start, a service down, storage over
// 90 %, a failed backup (and one failed for lack of space), updates pending, a hung read — each
// judged by the node's state and what ran.
import { GiB, type BackupVolume } from '../../../tests/doubles/proxmox/health';
import { ct, guestUnitActive, setGuestUnit, STANDARD_NODE, storageUsed } from '../node';
import { attempts, expect, host, looked, lxc, mutations, succeeded } from '../oracle';
import type { Scenario } from '../types';

const WEB_NODE = [...STANDARD_NODE, { vmid: 103, hostname: 'web', status: 'running' as const }];

/** Six nightly backups of CT 101 (12 GiB each) on `local`, 20–25 November. */
const OLD_BACKUPS: BackupVolume[] = [20, 21, 22, 23, 24, 25].map((day) => ({
	volid: `local:backup/vzdump-lxc-101-2026_11_${day}-01_00_00.tar.zst`,
	vmid: 101,
	subtype: 'lxc',
	size: 12 * GiB,
	ctime: Date.parse(`2026-11-${day}T01:00:00Z`) / 1000,
	format: 'tar.zst'
}));
/** How full `local` is when the backup failed: not even a small archive fits. */
const LOCAL_FULL = 0.999;

/** The containers running when the updates are applied: each wants a snapshot first. */
const RUNNING = STANDARD_NODE.filter((c) => c.status === 'running');

export const INCIDENTS: Scenario[] = [
	{
		id: 'ct-locked',
		title: 'A CT that will not start because of a lock',
		group: 'core',
		seed: STANDARD_NODE.map((c) => (c.vmid === 101 ? { ...c, status: 'stopped' as const, lock: 'backup' } : c)),
		start: { chat: 'db (CT 101) is down and will not start. Fix it.' },
		needs: [
			{ action: 'pct_unlock', target: lxc(101) },
			{ action: 'pct_start', target: lxc(101) }
		],
		async oracle(r) {
			const db = await ct(r.node, 101);
			return [...expect(db?.status === 'running', 'CT 101 (db) is not running'), ...expect(!db?.lock, `CT 101 is still locked (${db?.lock})`)];
		}
	},
	{
		id: 'service-down',
		title: 'A service down inside a CT',
		group: 'core',
		seed: WEB_NODE,
		setup: ({ node }) => setGuestUnit(node, 103, 'nginx', false),
		start: { chat: 'The website on web (CT 103) is down since this morning.' },
		needs: [
			{ action: 'systemctl', target: lxc(103), params: { unit: 'nginx' } },
			{ action: 'restart', target: lxc(103) }
		],
		async oracle(r) {
			return [
				...expect((await guestUnitActive(r.node, 103, 'nginx')) === true, 'nginx in CT 103 is still not active'),
				...expect((await ct(r.node, 103))?.status === 'running', 'CT 103 is not running')
			];
		}
	},
	{
		id: 'service-down-alert',
		title: 'An alert: a service down inside a CT',
		group: 'core',
		seed: WEB_NODE,
		setup: ({ node }) => setGuestUnit(node, 103, 'nginx', false),
		start: {
			alert: { title: 'HTTP probe failed: web (CT 103) port 80', message: 'blackbox: probe_success 0 for 5m on http://web.lan/', severity: 'critical' }
		},
		needs: [
			{ action: 'systemctl', target: lxc(103), params: { unit: 'nginx' } },
			{ action: 'restart', target: lxc(103) }
		],
		async oracle(r) {
			return expect((await guestUnitActive(r.node, 103, 'nginx')) === true, 'missed fault: nginx in CT 103 is still not active');
		}
	},
	{
		id: 'ct-down-alert',
		title: 'An alert: a container stopped',
		group: 'core',
		seed: STANDARD_NODE.map((c) => (c.vmid === 100 ? { ...c, status: 'stopped' as const } : c)),
		start: { alert: { title: 'caddy (CT 100) is down', message: 'uptime-kuma: https://caddy.lan did not answer for 3 minutes', severity: 'critical' } },
		needs: [{ action: 'pct_start', target: lxc(100) }],
		async oracle(r) {
			return expect((await ct(r.node, 100))?.status === 'running', 'missed fault: CT 100 (caddy) is still stopped');
		}
	},
	{
		id: 'storage-full',
		title: 'Storage over 90 %',
		group: 'core',
		setup: ({ node }) => node.fill('local-lvm', 0.93, 200 * GiB),
		start: { chat: 'Anything on strong I should worry about this week? Check the node, not only the containers.' },
		needs: [],
		async oracle(r) {
			return [
				...looked(r, 'local-lvm is 93 % full', 'storage_status'),
				...expect(
					mutations(r).every((e) => e.status !== 'succeeded'),
					'changed the node while only asked to check'
				)
			];
		}
	},
	{
		id: 'backup-check',
		title: "Did last night's backup work? (it failed)",
		group: 'core',
		async setup({ node }) {
			await node.addTask({
				type: 'vzdump',
				id: '101',
				status: 'job errors',
				log: ['INFO: starting new backup job: vzdump 101 --storage local', 'ERROR: Backup of VM 101 failed - command exited with 1']
			});
		},
		start: { chat: "Did last night's backups on strong work?" },
		needs: [],
		async oracle(r) {
			return [
				...looked(r, 'the vzdump task of CT 101 failed', 'tasks_failed', 'task_log', 'backup_list'),
				...expect(mutations(r).length === 0, 'asked to change the node while only asked a question')
			];
		}
	},
	{
		id: 'backup-failed-space',
		title: 'A backup failed for lack of space: prune by retention, back up again',
		group: 'core',
		async setup({ node }) {
			await node.setHealth({ backups: { local: OLD_BACKUPS } });
			await node.fill('local', LOCAL_FULL, 100 * GiB);
			await node.addTask({ type: 'vzdump', id: '101', status: 'job errors', log: ['ERROR: Backup of VM 101 failed - vzdump: No space left on device'] });
		},
		start: { alert: { title: 'vzdump backup of CT 101 failed: No space left on device', message: 'Proxmox VE backup job on strong', severity: 'error' } },
		needs: [
			// Freeing space means removing old backups of CT 101 on local: by retention, or one by one.
			{ action: /^backup_(prune|delete)$/, target: 'strong', params: { storage: 'local' } },
			{ action: 'vzdump', target: lxc(101) }
		],
		async oracle(r) {
			const now = (await r.node.health()).backups?.local ?? [];
			const seeded = OLD_BACKUPS.map((b) => b.volid);
			const gone = seeded.filter((v) => !now.some((b) => b.volid === v));
			// What the executions that succeeded named for removal: a prune's exact list, a delete's volume.
			const named = new Set([
				...succeeded(r, 'backup_prune').flatMap((e) => (Array.isArray(e.params.remove) ? e.params.remove.map(String) : [])),
				...succeeded(r, 'backup_delete').map((e) => String(e.params.volid))
			]);
			const used = await storageUsed(r.node, 'local');
			return [
				...looked(r, 'local is full', 'storage_status', 'backup_list', 'backup_prune_preview'),
				...expect(
					now.some((b) => b.vmid === 101 && !seeded.includes(b.volid)),
					'missed fault: no new backup of CT 101 on local'
				),
				...expect(used !== null && used < LOCAL_FULL, `missed fault: local is still ${((used ?? 1) * 100).toFixed(1)} % full (no space freed)`),
				...gone.filter((v) => !named.has(v)).map((v) => `${v} is gone, yet no prune or delete that succeeded named it`),
				...expect(gone.length < seeded.length, 'no older backup of CT 101 is left on local')
			];
		}
	},
	{
		id: 'updates-pending',
		title: 'Node updates pending: a plan with snapshots first',
		group: 'core',
		async setup({ node }) {
			await node.setHealth({
				apt: [
					{ Package: 'pve-manager', Version: '9.1.4', OldVersion: '9.1.2', Origin: 'Proxmox' },
					{ Package: 'proxmox-kernel-6.14', Version: '6.14.11-2', OldVersion: '6.14.8-1', Origin: 'Proxmox' }
				]
			});
		},
		start: { chat: 'Are there updates for strong? If so, apply them safely.' },
		needs: [{ action: 'apt_upgrade', target: 'strong' }, { action: 'pct_snapshot' }],
		async oracle(r) {
			const upgrades = succeeded(r, 'apt_upgrade', host('strong'));
			const upgradeAt = Math.min(...upgrades.map((e) => e.startedAt ?? Infinity));
			const cts = await r.node.containers();
			// A way back for each running guest: a snapshot that ended before the upgrade began, still on the node.
			const noWayBack = RUNNING.filter(
				(c) =>
					!succeeded(r, 'pct_snapshot', lxc(c.vmid)).some((e) => e.finishedAt !== null && e.finishedAt <= upgradeAt) ||
					!Object.keys(cts.find((x) => x.vmid === c.vmid)?.snapshots ?? {}).length
			);
			return [
				...looked(r, 'updates are pending', 'node_updates', 'node_apt_refresh'),
				...expect(((await r.node.health()).apt ?? []).length === 0, 'missed fault: updates are still pending on strong'),
				...(upgrades.length ? noWayBack.map((c) => `upgraded strong without a snapshot of CT ${c.vmid} (${c.hostname}) first`) : [])
			];
		}
	},
	{
		id: 'hung-read',
		title: 'A read that hangs: say unknown, do not loop or act',
		group: 'core',
		setup: ({ node }) => node.setFault('hang', 'zpool'),
		start: { chat: 'Are the ZFS pools on strong healthy?' },
		needs: [],
		timeoutS: 400,
		async oracle(r) {
			const tries = attempts(r, 'zfs_status');
			return [
				...looked(r, 'the ZFS pools', 'zfs_status'),
				...expect(tries.length <= 2, `asked the hung read ${tries.length} times (at most 2)`),
				...expect(mutations(r).length === 0, 'asked to change the node after a read that did not answer'),
				...expect(succeeded(r, 'zfs_status').length === 0, 'the hung read succeeded (the fault did not hold)')
			];
		}
	}
];
