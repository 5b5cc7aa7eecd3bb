// Derived views of the fake node: API status objects, storages, templates, JSON printing.
import { join } from 'node:path';
import { diskGb, listCts, listGuests, readJson } from './common.mjs';
import { loadHealth, withHealth } from './health.mjs';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

export const DEFAULT_TEMPLATES = [
	'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst',
	'local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst',
	'local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz'
];

/** @param {import('./common.mjs').Ctx} ctx @returns {string[]} */
export function templates(ctx) {
	return readJson(join(ctx.state, 'templates.json'), DEFAULT_TEMPLATES);
}

/** Cloud images on the host that `qm create --scsi0 <storage>:0,import-from=<path>` can import (size in GiB). */
export const DEFAULT_VM_IMAGES = [
	{ path: '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2', sizeGb: 2 },
	{ path: 'local:iso/noble-server-cloudimg-amd64.img', sizeGb: 3.5 },
	{ path: 'local:import/debian-12-genericcloud-amd64.qcow2', sizeGb: 2 }
];

/** @param {import('./common.mjs').Ctx} ctx @returns {{ path: string, sizeGb: number }[]} */
export function vmImages(ctx) {
	return readJson(join(ctx.state, 'images.json'), DEFAULT_VM_IMAGES);
}

/** Seconds the (fake) host has been up: fixed so output is deterministic. */
export const NODE_UPTIME = 1_209_600;

/**
 * The bytes a CT's root disk holds: `diskUsedGb` when a test set it, else 10–18 % of its size (by
 * vmid). What `disk` shows while it runs and what vzdump's tar reads, running or not.
 */
export function ctUsedBytes(ct) {
	if (typeof ct.diskUsedGb === 'number') return Math.round(ct.diskUsedGb * GiB);
	return Math.floor(Math.round(diskGb(ct) * GiB) * (0.1 + (ct.vmid % 5) / 50));
}

/** Status object as PVE::LXC::vmstatus() reports it (GET /nodes/{node}/lxc); a stopped CT's `disk` is 0 (not read), as PVE's. */
export function lxcStatus(ct, now = Date.now()) {
	const running = ct.status === 'running';
	const v = ct.vmid;
	const maxmem = ct.memory * MiB;
	const maxdisk = Math.round(diskGb(ct) * GiB);
	/** @type {Record<string, unknown>} */
	const s = {
		cpu: running ? Number((((v % 13) + 2) / 1000).toFixed(6)) : 0,
		cpus: ct.cores,
		disk: running ? ctUsedBytes(ct) : 0,
		diskread: running ? ((v % 50) + 10) * MiB : 0,
		diskwrite: running ? ((v % 30) + 5) * MiB : 0,
		maxdisk,
		maxmem,
		maxswap: ct.swap * MiB,
		mem: running ? Math.floor(maxmem * (0.05 + (v % 7) / 40)) : 0,
		name: ct.hostname,
		netin: running ? v * 104729 : 0,
		netout: running ? v * 52361 : 0,
		status: ct.status,
		swap: 0,
		type: 'lxc',
		uptime: running ? Math.max(1, Math.floor((now - (ct.startedAt ?? now)) / 1000)) : 0,
		vmid: v
	};
	if (running) s.pid = 100000 + v;
	if (ct.lock) s.lock = ct.lock;
	return s;
}

/** Status object as PVE::QemuServer::vmstatus() reports it (GET /nodes/{node}/qemu), from fake/qm.mjs's state. */
export function qemuStatus(vm, now = Date.now()) {
	const running = vm.status === 'running';
	const v = vm.vmid;
	const maxmem = vm.memory * MiB;
	/** @type {Record<string, unknown>} */
	const s = {
		cpu: running ? Number((((v % 11) + 3) / 1000).toFixed(6)) : 0,
		cpus: vm.cores,
		disk: 0, // QEMU does not know how full a guest's disk is
		diskread: running ? ((v % 40) + 20) * MiB : 0,
		diskwrite: running ? ((v % 20) + 5) * MiB : 0,
		maxdisk: Math.round(vm.diskGb * GiB),
		maxmem,
		mem: running ? Math.floor(maxmem * (0.2 + (v % 5) / 20)) : 0,
		name: vm.name,
		netin: running ? v * 7919 : 0,
		netout: running ? v * 3571 : 0,
		status: vm.status,
		uptime: running ? Math.max(1, Math.floor((now - (vm.startedAt ?? now)) / 1000)) : 0,
		vmid: v
	};
	if (running) s.pid = 200000 + v;
	if (vm.lock) s.lock = vm.lock;
	if (vm.template) s.template = 1;
	return s;
}

/** GET /nodes/{node}/lxc/{vmid}/status/current */
export function lxcCurrent(ct) {
	return { ...lxcStatus(ct), ha: { managed: 0 } };
}

/**
 * What a test set for this node in its state dir (node.json, see state.ts setNodeIn): its memory
 * in GiB (default 32) and which storages it has (default local and local-lvm; `ceph` is a shared
 * rbd pool).
 * @param {import('./common.mjs').Ctx} ctx @returns {{ maxmemGb?: number, storages?: string[] }}
 */
function nodeKnobs(ctx) {
	return readJson(join(ctx.state, 'node.json'), {});
}

/** @param {import('./common.mjs').Ctx} ctx */
export function nodeEntry(ctx) {
	const running = listCts(ctx).filter((c) => c.status === 'running');
	// A running VM's QEMU process holds (about) all of its memory; a CT only what it uses.
	const vmMem = listGuests(ctx, 'vms')
		.filter((v) => v.status === 'running')
		.reduce((a, v) => a + v.memory * MiB, 0);
	const maxmem = (nodeKnobs(ctx).maxmemGb ?? 32) * GiB;
	return {
		cpu: Number((0.02 + running.length * 0.011).toFixed(6)),
		disk: 12 * GiB,
		id: `node/${ctx.node}`,
		level: '',
		maxcpu: 8,
		maxdisk: 94 * GiB,
		maxmem,
		mem: Math.floor(2.5 * GiB + running.reduce((a, c) => a + c.memory * MiB * 0.3, 0) + vmMem),
		node: ctx.node,
		ssl_fingerprint: '5A:1F:3C:9E:22:B4:7D:08:61:CA:0E:93:F5:4B:A7:2D:88:16:E0:3F:C9:55:7A:B1:04:6E:D2:98:3B:C1:7F:20',
		status: 'online',
		type: 'node',
		uptime: NODE_UPTIME
	};
}

/** Storage status as GET /nodes/{node}/storage returns it (bytes). */
export function storages(ctx) {
	// A thin volume holds what was written: 18 % of each disk (keep in step with health.ts guestBytes).
	const lvmBytes = listCts(ctx)
		.filter((c) => String(c.rootfs).startsWith('local-lvm:'))
		.reduce((a, c) => a + diskGb(c) * GiB * 0.18, 0);
	const local = { total: 100_861_726_720, used: 9_663_676_416 };
	const lvm = { total: 374_538_764_288, used: Math.floor(4 * GiB + lvmBytes) };
	const only = nodeKnobs(ctx).storages;
	const health = loadHealth(ctx);
	return [
		{ storage: 'local', type: 'dir', content: 'backup,iso,vztmpl', ...local },
		{ storage: 'local-lvm', type: 'lvmthin', content: 'images,rootdir', ...lvm, guests: Math.floor(lvmBytes) },
		...(only?.includes('ceph') ? [{ storage: 'ceph', type: 'rbd', content: 'images,rootdir', shared: 1, total: 2000 * GiB, used: 300 * GiB }] : [])
	]
		.filter((s) => !only || only.includes(s.storage))
		.map((s) => withHealth(health, s))
		.map((s) => ({
			active: s.active ?? 1,
			avail: s.total - s.used,
			content: s.content,
			enabled: s.enabled ?? 1,
			shared: s.shared ?? 0,
			storage: s.storage,
			total: s.total,
			type: s.type,
			used: s.used,
			used_fraction: Number((s.used / s.total).toFixed(6))
		}));
}

function sortKeys(value) {
	if (Array.isArray(value)) return value.map(sortKeys);
	if (value && typeof value === 'object') {
		return Object.fromEntries(
			Object.keys(value)
				.sort()
				.map((k) => [k, sortKeys(value[k])])
		);
	}
	return value;
}

/** Perl JSON canonical output; `pretty` mimics JSON::XS (3-space indent, `"k" : v`). */
export function toJson(value, pretty = false) {
	const sorted = sortKeys(value);
	if (!pretty) return JSON.stringify(sorted);
	return JSON.stringify(sorted, null, 3).replace(/^(\s*"(?:[^"\\]|\\.)*"):/gm, '$1 :');
}
