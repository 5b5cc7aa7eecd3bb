// Incidents whose fixing actions came last (backup_prune with its dry run, vzdump with a retention;
// apt_upgrade on a node after node_apt_refresh). Each names the actions it needs as patterns: while
// the catalogue has none that match it is skipped with that reason. They are counted apart until a
// scripted careful model has passed them in tests/integration/qualify.test.ts.
import { GiB } from '../../../tests/doubles/proxmox/health';
import { expect, looked, lxc } from '../oracle';
import type { Scenario } from '../types';

export const PENDING: Scenario[] = [
	{
		id: 'backup-failed-space',
		title: 'A backup failed for lack of space: prune by retention, back up again',
		group: 'pending',
		needsActions: [/prune/],
		async setup({ node }) {
			const now = Math.floor(Date.now() / 1000);
			const old = Array.from({ length: 6 }, (_, i) => ({
				volid: `local:backup/vzdump-lxc-101-2026_11_${String(20 + i).padStart(2, '0')}-01_00_00.tar.zst`,
				vmid: 101,
				subtype: 'lxc',
				size: 12 * GiB,
				ctime: now - (10 - i) * 86_400,
				format: 'tar.zst'
			}));
			await node.setHealth({ backups: { local: old } });
			await node.fill('local', 0.97, 100 * GiB);
			await node.addTask({ type: 'vzdump', id: '101', status: 'job errors', log: ['ERROR: Backup of VM 101 failed - vzdump: No space left on device'] });
		},
		start: { alert: { title: 'vzdump backup of CT 101 failed: No space left on device', message: 'Proxmox VE backup job on strong', severity: 'error' } },
		needs: [
			{ action: /prune/, target: 'strong' },
			{ action: 'vzdump', target: lxc(101) }
		],
		async oracle(r) {
			const backups = (await r.node.health()).backups?.local ?? [];
			const fresh = backups.filter((b) => b.vmid === 101 && b.ctime > Math.floor(Date.now() / 1000) - 3600);
			return [...looked(r, 'the storage is full', 'storage_status', 'backup_list'), ...expect(fresh.length > 0, 'no new backup of CT 101 on local')];
		}
	},
	{
		id: 'updates-pending',
		title: 'Node updates pending: a plan with snapshots first',
		group: 'pending',
		// apt_upgrade on a node (its dist-upgrade, with the "reboot needed" flag) came with node_apt_refresh.
		needsActions: [/^node_apt_refresh$/],
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
			return [
				...looked(r, 'updates are pending', 'node_updates', 'node_apt_refresh'),
				...expect(((await r.node.health()).apt ?? []).length === 0, 'updates are still pending')
			];
		}
	}
];
