// The pure parts of the node operations (issue #45 item 2): what a dist-upgrade set up and whether
// it needs a reboot, the decisive line of a failed start's task log, a storage's volumes largest
// first, and the read-back that nothing is pending.
import { describe, expect, it } from 'vitest';
import { upgradeDigest } from '../../src/lib/server/proxmox/actions/exec-packages';
import { decisiveLine, failedTaskUpid } from '../../src/lib/server/proxmox/task-cause';
import { contentSummary } from '../../src/lib/server/proxmox/content-parse';
import { judgeOutput } from '../../src/lib/server/executions/verdict';

const GiB = 1024 ** 3;
const log = (...t: string[]) => JSON.stringify(t.map((x, i) => ({ n: i + 1, t: x })));

describe('upgradeDigest', () => {
	it('lists what dpkg set up and says reboot for a kernel (Proxmox 8/9, 7, Debian)', () => {
		for (const kernel of ['proxmox-kernel-6.8', 'pve-kernel-5.15', 'linux-image-amd64']) {
			const out = `2 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\nSetting up ${kernel} (1.2-3) ...\nSetting up pve-manager (8.3.3) ...\n`;
			expect(upgradeDigest(out, 'dist-upgrade')).toBe(
				`dist-upgrade: 2 packages upgraded (2 upgraded, 0 newly installed): ${kernel} 1.2-3, pve-manager 8.3.3\nreboot needed: a new kernel (${kernel}) runs only after a reboot`
			);
		}
	});
	it('nothing to do, no reboot; output it does not know is not an error', () => {
		expect(upgradeDigest('0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.', 'x')).toBe('x: nothing to upgrade (0 upgraded, 0 newly installed)');
		expect(upgradeDigest(undefined, 'x')).toBe('x: dist-upgrade done');
	});
});

describe('decisiveLine', () => {
	it('a known cause before the generic end of the task', () => {
		expect(
			decisiveLine(log('mount: failed', 'lxc: 3858 No space left on device - Failed to mount rootfs', "TASK ERROR: startup for container '102' failed"))
		).toBe('lxc: 3858 No space left on device - Failed to mount rootfs');
		expect(decisiveLine(log('starting', "TASK ERROR: storage 'nas' does not exist"))).toBe("TASK ERROR: storage 'nas' does not exist");
	});
	it('the task error when nothing more specific; null for no error or no JSON', () => {
		expect(decisiveLine(log('a', 'TASK ERROR: command failed: exit code 1'))).toBe('TASK ERROR: command failed: exit code 1');
		expect(decisiveLine(log('all fine', 'TASK OK'))).toBeNull();
		expect(decisiveLine('not json')).toBeNull();
	});
	it('failedTaskUpid takes a well-formed UPID only', () => {
		const upid = 'UPID:strong:00001388:0012D687:675A1B2C:vzstart:102:root@pam:';
		expect(failedTaskUpid(JSON.stringify([{ upid, status: 'x' }]))).toBe(upid);
		expect(failedTaskUpid(JSON.stringify([{ upid: 'UPID:../../etc:x' }]))).toBeNull();
		expect(failedTaskUpid('[]')).toBeNull();
	});
});

describe('contentSummary', () => {
	it('largest first by what each volume holds, capped', () => {
		const vols = [
			{ volid: 'local-lvm:vm-100-disk-0', content: 'rootdir', size: 8 * GiB, used: 1.4 * GiB, vmid: 100 },
			{ volid: 'local-lvm:vm-104-disk-0', content: 'rootdir', size: 500 * GiB, used: 90 * GiB, vmid: 104 },
			{ volid: 'local-lvm:vm-200-disk-0', content: 'images', size: 32 * GiB, used: 10 * GiB, vmid: 200 }
		];
		expect(contentSummary(JSON.stringify(vols), 'local-lvm', 2).split('\n')).toEqual([
			'local-lvm: 3 volumes, 101.4 GiB in all, largest first:',
			'local-lvm:vm-104-disk-0 (CT 104, rootdir): 90.0 GiB of 500.0 GiB',
			'local-lvm:vm-200-disk-0 (VM 200, images): 10.0 GiB of 32.0 GiB',
			'… 1 more'
		]);
		expect(contentSummary('[]', 'nas', 5)).toBe('nas: no volumes');
		expect(() => contentSummary('storage offline', 'nas', 5)).toThrow(/did not answer JSON/);
	});
});

describe("the read-back 'none'", () => {
	const v = { none: true as const, expect: 'no pending updates', failure: 'pending' };
	it('an empty list passes, packages still listed fail, anything else is unreadable', () => {
		expect(judgeOutput(v, '[]')).toEqual({ pass: true, showed: 'no pending updates' });
		expect(judgeOutput(v, JSON.stringify([{ Package: 'pve-manager' }]))).toEqual({ pass: false, showed: '1 still listed: pve-manager' });
		expect(judgeOutput(v, 'E: oops')).toMatchObject({ unreadable: expect.stringContaining('not JSON') });
		expect(judgeOutput(v, '{}')).toMatchObject({ unreadable: expect.stringContaining('not a list') });
	});
});
