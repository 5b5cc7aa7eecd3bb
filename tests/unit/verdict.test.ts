// The read-back's judgment (executions/verdict.ts): an answer that shows the wanted state is
// verified, a definite other answer still failing, and no answer (a timeout, a dropped link, a
// busy host, something unreadable) inconclusive — never success.
import { describe, expect, it } from 'vitest';
import { ACTIONS } from '../../src/lib/server/proxmox/actions';
import { judgeRead, readsFor } from '../../src/lib/server/executions/verdict';

const ok = (stdout: string, exitCode = 0, stderr = '') => ({ exitCode, timedOut: false, stdout, stderr });
const [running] = ACTIONS.pct_start.readBack!({}, { vmid: '105' });
const [gone] = ACTIONS.pct_destroy.readBack!({ purge: true } as never, { vmid: '105' });
const [unlocked] = ACTIONS.pct_unlock.readBack!({}, { vmid: '105' });
const [noneLeft] = ACTIONS.apt_upgrade.readBack!({}, {});
const [stopped] = ACTIONS.systemctl.readBack!({ unit: 'nginx', op: 'stop' } as never, { vmid: '105' });

describe('judgeRead', () => {
	it('verified, still failing or inconclusive from one read', () => {
		expect(judgeRead(running, ok('status: running\n'))).toEqual({ verdict: 'verified', detail: 'CT 105 running (read back: status: running)' });
		expect(judgeRead(running, ok('status: stopped\n'))).toEqual({ verdict: 'still_failing', detail: 'CT 105 is not running; read back: status: stopped' });
		expect(judgeRead(running, { ...ok(''), timedOut: true, exitCode: null }).verdict).toBe('inconclusive');
		expect(judgeRead(running, { ...ok(''), exitCode: null })).toEqual({
			verdict: 'inconclusive',
			detail: 'could not read CT 105 running: pct status ended without an exit status'
		});
		expect(judgeRead(running, { error: 'connection refused' }).verdict).toBe('inconclusive');
		// PVE's own lock wait on a busy host is no answer about the guest.
		expect(judgeRead(running, ok('', 255, "can't lock file '/run/lock/lxc/pve-config-105.lock' - got timeout")).verdict).toBe('inconclusive');
		expect(judgeRead(running, ok('Segmentation fault?')).verdict).toBe('inconclusive');
		expect(judgeRead(running, ok('', 2, "Configuration file 'nodes/pve/lxc/105.conf' does not exist")).verdict).toBe('still_failing');
	});

	it('gone, config fields and any-exit answers', () => {
		expect(judgeRead(gone, ok('', 2, "Configuration file 'nodes/pve/lxc/105.conf' does not exist")).verdict).toBe('verified');
		expect(judgeRead(gone, ok('status: stopped\n')).verdict).toBe('still_failing');
		expect(judgeRead(gone, ok('', 1, 'something else')).verdict).toBe('inconclusive');
		// A node's pending list that could not be read says nothing about the updates.
		expect(judgeRead(noneLeft, ok('[]')).verdict).toBe('verified');
		expect(judgeRead(noneLeft, ok('[{"Package":"pve-manager"}]')).verdict).toBe('still_failing');
		expect(judgeRead(noneLeft, ok('', 255, 'ipcc_send_rec[1] failed: Connection refused')).verdict).toBe('inconclusive');
		expect(judgeRead(noneLeft, ok('', 2, '500 unable to read apt status')).verdict).toBe('inconclusive');
		// Only pct's own words about this CT: another "does not exist" or "no such" is no answer about it.
		expect(judgeRead(gone, ok('', 255, 'ssh: connect to host: no such host')).verdict).toBe('inconclusive');
		expect(judgeRead(gone, ok('', 2, "storage 'local-lvm' does not exist")).verdict).toBe('inconclusive');
		expect(judgeRead(gone, ok('', 2, "Configuration file 'nodes/pve/lxc/106.conf' does not exist")).verdict).toBe('inconclusive');
		expect(judgeRead(unlocked, ok('arch: amd64\ncores: 1\n')).verdict).toBe('verified');
		expect(judgeRead(unlocked, ok('arch: amd64\nlock: create\n'))).toEqual({
			verdict: 'still_failing',
			detail: "CT 105's config does not show no lock; read back: lock: create"
		});
		expect(judgeRead(stopped, ok('inactive\n', 3)).verdict).toBe('verified');
		expect(judgeRead(stopped, ok('active\n')).verdict).toBe('still_failing');
	});
});

describe('readsFor', () => {
	const planned = (action: 'pct_start' | 'pct_stop' | 'pveam_download' | 'pct_exec', params: Record<string, unknown>) =>
		ACTIONS[action].steps(params as never, { vmid: '105' });
	it('own verify steps always; then the health check, else the catalogued read-back, when read-backs are on', () => {
		const dl = { storage: 'local', template: 'x.tar.zst' };
		expect(readsFor('pveam_download', dl, {}, planned('pveam_download', dl), false).reads.map((r) => r.kind)).toEqual(['own']);
		expect(readsFor('pct_start', {}, { vmid: '105' }, planned('pct_start', {}), true).reads.map((r) => [r.kind, r.step.label])).toEqual([
			['health', 'health: CT running']
		]);
		expect(readsFor('pct_stop', {}, { vmid: '105' }, planned('pct_stop', {}), true).reads.map((r) => [r.kind, r.step.label])).toEqual([
			['verify', 'verify: CT 105 stopped']
		]);
		expect(readsFor('pct_stop', {}, { vmid: '105' }, planned('pct_stop', {}), false).reads).toEqual([]);
		expect(readsFor('pct_exec', { argv: ['true'] }, { vmid: '105' }, planned('pct_exec', { argv: ['true'] }), true).reads).toEqual([]);
	});
});
