// The homelab's real incidents (issue #45): a CT that will not start, a service down, storage over
// 90 %, a failed backup, a hung read — each judged by the node's state and what ran.
import { GiB } from '../../../tests/doubles/proxmox/health';
import { ct, guestUnitActive, setGuestUnit, STANDARD_NODE } from '../node';
import { attempts, expect, looked, lxc, mutations, succeeded } from '../oracle';
import type { Scenario } from '../types';

const WEB_NODE = [...STANDARD_NODE, { vmid: 103, hostname: 'web', status: 'running' as const }];

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
