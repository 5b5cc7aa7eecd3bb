// The node-health reads (issue #45 item 1) against the real SSH Proxmox double: each read's
// few lines for the model come from the double's state, and a read that failed, timed out or
// did not parse is "unknown: <why>", never an empty "none".
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { requestExecutionTool } from '../../src/lib/server/agent/tools/request-execution';
import { describeActionTool } from '../../src/lib/server/agent/tools/describe-action';
import type { ToolContext } from '../../src/lib/server/agent/tools/context';
import { resetEnvCache } from '../../src/lib/server/env';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { GiB } from '../doubles/proxmox/health';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, newOperator, newSession, useHub } from '../helpers/executions';

useTestDatabase();
useHub();

let pve: ProxmoxDouble;
let ctx: ToolContext;
const call = { toolCallId: 'x', messages: [] };
// Tool results are unions with ToolError; tests read them loosely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

async function read(action: string, params: Record<string, unknown> = {}): Promise<Loose> {
	const t = requestExecutionTool(ctx);
	return t.execute!({ target: 'strong', action, params, reason: 'test' }, call);
}
const day = (iso: string) => Math.floor(Date.parse(iso) / 1000);

beforeAll(async () => {
	pve = await startProxmoxDouble({
		nodeName: 'strong',
		delayMs: 1,
		seed: [
			{ vmid: 101, hostname: 'media', status: 'running' },
			{ vmid: 102, hostname: 'db', status: 'stopped' }
		]
	});
	await addHost(pve);
	expect((await syncAllHosts())[0]).toMatchObject({ ok: true });
	const sessionId = await newSession(await newOperator('alice'));
	ctx = { sessionId, messageId: '00000000-0000-0000-0000-000000000001', signal: new AbortController().signal, turn: { httpGets: 0 } };
	process.env.NOMOS_HOST_WAIT_MIN = '0.05';
	resetEnvCache();
});

afterAll(async () => {
	await pve?.close();
	delete process.env.NOMOS_HOST_WAIT_MIN;
	resetEnvCache();
});

beforeEach(async () => {
	await pve.setFault('fail', null);
	await pve.setFault('hang', null);
});

describe('node-health reads', () => {
	it('storage_status: per storage % used, GiB and free, from the node as filled', async () => {
		await pve.fill('local', 0.92, 100 * GiB);
		const r = await read('storage_status');
		expect(r.status).toBe('succeeded');
		expect(r.output).toMatch(/^local: 92% used \(92\.0\/100\.0 GiB, 8\.0 free\); dir backup,iso,vztmpl$/m);
		expect(r.output).toMatch(/^local-lvm: \d+% used/m);
		expect(r.command).toBe("'pvesh' 'get' '/nodes/localhost/storage' '--output-format' 'json'");
	});

	it('backup_list: per guest on a storage, and each volume of one guest newest first', async () => {
		const vol = (vmid: number, at: string, gib: number, extra = {}) => ({
			volid: `local:backup/vzdump-lxc-${vmid}-${at.replace(/[-:]/g, '_').replace('T', '-')}.tar.zst`,
			vmid,
			subtype: 'lxc',
			size: gib * GiB,
			ctime: day(`${at}Z`),
			...extra
		});
		await pve.setHealth({
			backups: {
				local: [
					vol(101, '2026-12-01T02:00:00', 2),
					vol(101, '2026-12-05T02:00:00', 2.5, { protected: 1, notes: 'before upgrade' }),
					vol(101, '2026-12-03T02:00:00', 2),
					vol(102, '2026-12-04T02:00:00', 1)
				]
			}
		});
		const all = await read('backup_list', { storage: 'local' });
		expect(all.output.split('\n')).toEqual([
			'local: 4 backups, 7.5 GiB by guest (name a vmid to list its volumes):',
			'CT 101: 3 (6.5 GiB, newest 2026-12-05 02:00, oldest 2026-12-01 02:00, 1 protected)',
			'CT 102: 1 (1.0 GiB, newest 2026-12-04 02:00, oldest 2026-12-04 02:00)'
		]);
		const one = await read('backup_list', { storage: 'local', vmid: 101 });
		expect(one.command).toContain("'--content' 'backup' '--vmid' '101'");
		expect(one.output.split('\n')).toEqual([
			'local: 3 backups of guest 101, 6.5 GiB (newest first):',
			'local:backup/vzdump-lxc-101-2026_12_05-02_00_00.tar.zst 2.5 GiB 2026-12-05 02:00 protected "before upgrade"',
			'local:backup/vzdump-lxc-101-2026_12_03-02_00_00.tar.zst 2.0 GiB 2026-12-03 02:00',
			'local:backup/vzdump-lxc-101-2026_12_01-02_00_00.tar.zst 2.0 GiB 2026-12-01 02:00'
		]);
		// A backup vzdump writes is a volume of the storage, and its size counts as used.
		const before = await pve.health();
		expect(before.backups?.local).toHaveLength(4);
	});

	it('backup_list of a storage that does not exist: unknown with why', async () => {
		const r = await read('backup_list', { storage: 'nas' });
		expect(r.status).toBe('failed');
		expect(r.output).toMatch(/^unknown: .*storage 'nas' does not exist/);
	});

	it('backup_jobs: schedule, storage, guests and retention', async () => {
		await pve.setHealth({
			jobs: [
				{
					id: 'backup-0c1a',
					schedule: '02:00',
					storage: 'local',
					all: 1,
					mode: 'snapshot',
					enabled: 1,
					'prune-backups': 'keep-last=3,keep-weekly=2',
					'next-run': day('2026-12-07T02:00:00Z'),
					type: 'vzdump'
				},
				{ id: 'backup-9f2e', schedule: 'sat 04:00', storage: 'local', vmid: '102', enabled: 0, 'prune-backups': { 'keep-daily': 7 }, type: 'vzdump' }
			]
		});
		const r = await read('backup_jobs');
		expect(r.output.split('\n')).toEqual([
			'backup-0c1a: enabled, 02:00 → local; all guests; mode snapshot; keep keep-last=3, keep-weekly=2; next 2026-12-07 02:00',
			'backup-9f2e: DISABLED, sat 04:00 → local; guests 102; keep keep-daily=7'
		]);
		await pve.setHealth({ jobs: null });
		expect((await read('backup_jobs')).output).toBe('no backup jobs configured');
	});

	it('tasks_failed lists only failed tasks with their UPIDs; task_log reads one', async () => {
		await pve.addTask({ type: 'vzdump', id: '101', starttime: day('2026-12-06T01:00:00Z'), status: 'OK', log: ['INFO: fine'] });
		const log = [
			'INFO: starting new backup job: vzdump 101 --storage local --mode snapshot',
			'INFO: Starting Backup of VM 101 (lxc)',
			"INFO: creating vzdump archive '/var/lib/vz/dump/vzdump-lxc-101-2026_12_06-02_00_01.tar.zst'",
			'ERROR: Backup of VM 101 failed - vma_queue_write: write error - No space left on device',
			...Array.from({ length: 60 }, (_, i) => `INFO: cleanup ${i}`),
			'INFO: Backup job finished with errors',
			'TASK ERROR: job errors'
		];
		const upid = await pve.addTask({ type: 'vzdump', id: '101', starttime: day('2026-12-06T02:00:00Z'), status: 'job errors', log });
		const failed = await read('tasks_failed', { limit: 5 });
		expect(failed.output.split('\n')).toEqual(['1 failed task (newest first; task_log reads one):', `2026-12-06 02:00 vzdump 101: job errors — ${upid}`]);
		const t = await read('task_log', { upid, lines: 5 });
		expect(t.status).toBe('succeeded');
		const lines = t.output.split('\n');
		expect(lines[0]).toBe('vzdump 101: ended: job errors; 66 log lines');
		expect(lines).toContain('ERROR: Backup of VM 101 failed - vma_queue_write: write error - No space left on device');
		expect(lines.slice(-2)).toEqual(['INFO: Backup job finished with errors', 'TASK ERROR: job errors']);
		expect(t.command).toContain(`'pvesh' 'get' '/nodes/localhost/tasks/${upid}/log' '--start' '0' '--limit' '1000'`);
		// Another member's task is read through its node, which must be the one the UPID names.
		expect((await read('task_log', { upid, node: 'pve2' })).error).toMatch(/node must be the member the UPID names/);
	});

	it('task_log refuses what is not a UPID before anything runs', async () => {
		const before = (await pve.argvLog()).length;
		for (const upid of [
			'UPID:strong:x',
			'UPID:strong:00001F40:0012D687:6752A1C0:vzdump:101:root@pam:/../../x',
			'UPID:strong:00001F40:0012D687:6752A1C0:vzdump:1;rm -rf /:root@pam:'
		]) {
			const r = await read('task_log', { upid });
			expect(r.error, upid).toMatch(/upid/i);
		}
		expect((await pve.argvLog()).length).toBe(before);
	});

	it('node_updates: count, Proxmox packages first, a new kernel flagged', async () => {
		await pve.setHealth({
			apt: [
				{ Package: 'libc6', OldVersion: '2.36-9+deb12u8', Version: '2.36-9+deb12u9', Origin: 'Debian' },
				{ Package: 'pve-manager', OldVersion: '8.3.2', Version: '8.3.5', Origin: 'Proxmox' },
				{ Package: 'proxmox-kernel-6.8', OldVersion: '6.8.12-5', Version: '6.8.12-8', Origin: 'Proxmox' }
			]
		});
		const r = await read('node_updates');
		expect(r.output.split('\n')).toEqual([
			'3 pending updates (as of the last package-list refresh), 2 from Proxmox; a new kernel (proxmox-kernel-6.8): reboot needed to use it:',
			'pve-manager 8.3.2 → 8.3.5',
			'proxmox-kernel-6.8 6.8.12-5 → 6.8.12-8',
			'libc6 2.36-9+deb12u8 → 2.36-9+deb12u9'
		]);
	});

	it('zfs_status: healthy pools, then a degraded one in its own words', async () => {
		expect((await read('zfs_status')).output).toBe('no ZFS pools on this node');
		await pve.setHealth({ zpools: [{ name: 'rpool', size: 1000 * GiB, alloc: 450 * GiB, health: 'ONLINE', frag: 12 }] });
		expect((await read('zfs_status')).output.split('\n')).toEqual(['all pools healthy', 'rpool: ONLINE, 45% used (450.0/1000.0 GiB, 550.0 free), frag 12%']);
		const status = [
			'  pool: tank',
			' state: DEGRADED',
			'status: One or more devices could not be used because the label is missing or invalid.',
			'action: Replace the device using zpool replace.',
			'config:',
			'',
			'\tNAME        STATE     READ WRITE CKSUM',
			'\ttank        DEGRADED     0     0     0',
			'\t  mirror-0  DEGRADED     0     0     0',
			'\t    sda     ONLINE       0     0     0',
			'\t    sdb     UNAVAIL      0     0     0',
			'',
			'errors: No known data errors'
		].join('\n');
		await pve.setHealth({
			zpools: [
				{ name: 'rpool', size: 1000 * GiB, alloc: 450 * GiB, health: 'ONLINE' },
				{ name: 'tank', size: 4000 * GiB, alloc: 3700 * GiB, health: 'DEGRADED', status }
			]
		});
		const lines = (await read('zfs_status')).output.split('\n');
		expect(lines).toContain('tank: DEGRADED, 92% used (3700.0/4000.0 GiB, 300.0 free), frag 0%');
		expect(lines).toContain('state: DEGRADED');
		expect(lines).toContain('sdb     UNAVAIL      0     0     0');
		expect(lines).not.toContain('all pools healthy');
	});

	it('disks_smart: SMART health and wearout; a failing disk named first', async () => {
		await pve.setHealth({
			disks: [
				{ devpath: '/dev/nvme0n1', type: 'nvme', model: 'Samsung SSD 980 PRO 1TB', size: 1_000_204_886_016, health: 'PASSED', wearout: 3, used: 'LVM' },
				{ devpath: '/dev/sda', type: 'hdd', model: 'WDC WD40EFRX', size: 4_000_787_030_016, health: 'FAILED', wearout: 'N/A', used: 'ZFS' }
			]
		});
		expect((await read('disks_smart')).output.split('\n')).toEqual([
			'2 disks, 1 not healthy (/dev/sda FAILED):',
			'/dev/nvme0n1 nvme, Samsung SSD 980 PRO 1TB, 1000 GB, SMART PASSED, wearout 3%, used by LVM',
			'/dev/sda hdd, WDC WD40EFRX, 4001 GB, SMART FAILED, used by ZFS'
		]);
	});

	it('pve_services: the ones not running', async () => {
		await pve.setService('pveproxy', { active: false });
		expect((await read('pve_services')).output.split('\n')).toEqual(['7 of 8 PVE services running; not running:', 'pveproxy dead (inactive/dead, enabled)']);
	});

	it('a read that fails, does not parse or does not answer is unknown with why, never none', async () => {
		await pve.setFault('fail', { tool: 'pvesh', match: '/apt/update', exitCode: 255, stderr: 'ipcc_send_rec[1] failed: Connection refused' });
		const failed = await read('node_updates');
		expect(failed.output).toMatch(/^unknown: pending updates exited with 255: ipcc_send_rec\[1\] failed: Connection refused/);
		expect(failed.output).not.toMatch(/no pending/);

		await pve.setHealth({ disks: [{ devpath: 7 } as never] });
		const garbled = await read('disks_smart');
		expect(garbled.status).toBe('failed');
		expect(garbled.output).toMatch(/^unknown: the output did not parse: pvesh get \/nodes\/<node>\/disks\/list: unexpected output at 0\.devpath/);

		await pve.setFault('hang', 'zpool');
		const hung = await read('zfs_status');
		expect(hung.status).toBe('failed');
		expect(hung.output).toMatch(/^unknown: .*did not answer/);
		expect(hung.output).not.toMatch(/no ZFS pools|healthy/);
	}, 90_000);
});

describe('the family is described on demand', () => {
	it('request_execution names the family and lists none of it; describe_action health lists each read', async () => {
		const desc = requestExecutionTool(ctx).description!;
		expect(desc).toContain('describe_action explains one action or the family health (storage, backups and jobs');
		for (const a of ['storage_status(', 'backup_list(', 'task_log(', 'zfs_status(']) expect(desc).not.toContain(a);
		const d: Loose = await describeActionTool(ctx).execute!({ action: 'health' }, call);
		// the nine reads, the node's five operations (node-ops.test.ts) and the four backup actions (backups.test.ts)
		expect(d.actions).toHaveLength(18);
		expect(d.actions).toContain(
			'backup_list(storage, vmid?, node?): the backups on a storage: per guest count, size, newest and oldest; with vmid each volume (volid, size, time, protected, notes)'
		);
		expect(d.actions.find((a: string) => a.startsWith('task_log('))).toMatch(/^task_log\(upid, lines\?=40, node\?\)/);
	});
});
