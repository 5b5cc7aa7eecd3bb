// A container Nomos runs commands and pushes files in must keep its root inside (ct-contained.ts),
// as nomos-gate checks it before pct_exec and pct_push on the mutation key.
import { describe, expect, it } from 'vitest';
import { uncontained } from '../../src/lib/server/proxmox/ct-contained';
import { ACTIONS } from '../../src/lib/server/proxmox/actions';

const base = 'arch: amd64\nhostname: web\nrootfs: local-lvm:vm-105-disk-0,size=8G\n';

describe('uncontained', () => {
	it('lets an unprivileged container through, with volumes or bind mounts (uid-mapped: nobody owns the node there)', () => {
		expect(uncontained('105', `${base}mp0: local-lvm:vm-105-disk-1,mp=/data,size=4G\nfeatures: nesting=1\nunprivileged: 1\n`)).toBeNull();
		expect(uncontained('105', `${base}mp1: /tank/media,mp=/media\nunprivileged: 1\n`)).toBeNull();
	});

	it('names what reaches the node', () => {
		expect(uncontained('105', base)).toMatch(/^CT 105 is privileged/);
		expect(uncontained('105', `${base}unprivileged: 0\n`)).toMatch(/^CT 105 is privileged/);
		expect(uncontained('105', `${base}dev0: /dev/sda\nunprivileged: 1\n`)).toMatch(/device of the node \(dev0\)/);
		expect(uncontained('105', `${base}lxc.mount.entry: /dev/dri dev/dri none bind\nunprivileged: 1\n`)).toMatch(/raw lxc key \(lxc\.mount\.entry\)/);
	});

	it('is checked before pct_exec and pct_push, not before the fixed reads', () => {
		const pre = (name: 'pct_exec' | 'pct_push' | 'ct_service_active', params: unknown) =>
			ACTIONS[name].preconditions!(ACTIONS[name].params.parse(params) as never, { vmid: '105' });
		expect(pre('pct_exec', { argv: ['id'] })).toContainEqual({ kind: 'ct-contained', vmid: '105' });
		expect(pre('pct_push', { path: '/etc/x', content: 'x' })).toContainEqual({ kind: 'ct-contained', vmid: '105' });
		expect(pre('ct_service_active', { unit: 'nginx.service' })).not.toContainEqual({ kind: 'ct-contained', vmid: '105' });
	});
});
