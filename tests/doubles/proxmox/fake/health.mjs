// The fake node's health state (health.json, written by tests through health.ts and by vzdump):
// storage fill, backup volumes per storage, backup jobs, tasks with their logs, pending apt
// updates, ZFS pools, disks with SMART; and the API views pvesh and zpool print from it.
import { join } from 'node:path';
import { diskGb, fail, listCts, readJson, writeJson } from './common.mjs';
import { loadUnits } from './systemctl.mjs';

const GiB = 1024 ** 3;

/** @param {import('./common.mjs').Ctx} ctx */
export function loadHealth(ctx) {
	return readJson(join(ctx.state, 'health.json'), {});
}

/** @param {import('./common.mjs').Ctx} ctx */
export function saveHealth(ctx, h) {
	writeJson(join(ctx.state, 'health.json'), h);
}

/** Bytes the backups on a storage take. */
export function backupBytes(h, storage) {
	return (h.backups?.[storage] ?? []).reduce((a, v) => a + (v.size ?? 0), 0);
}

/**
 * A storage row with the test's overrides: `total`, `other` (bytes used by everything but
 * backups), `active`, `enabled`; `fill` (a fraction set by fill()) with `fillBackups` and
 * `fillGuests` (the backups' and the guest disks' bytes then, `s.guests` now): deleting backups
 * or destroying a guest afterwards frees their space. Backups always count.
 */
export function withHealth(h, s) {
	const o = h.storages?.[s.storage] ?? {};
	const total = o.total ?? s.total;
	const filled = o.fill !== undefined;
	const other = filled ? Math.max(0, Math.floor(o.fill * total) - (o.fillBackups ?? 0) - (o.fillGuests ?? 0)) : (o.other ?? s.used);
	const used = Math.min(total, other + backupBytes(h, s.storage) + (filled ? (s.guests ?? 0) : 0));
	return { ...s, total, used, ...(o.active !== undefined ? { active: o.active } : {}), ...(o.enabled !== undefined ? { enabled: o.enabled } : {}) };
}

/**
 * GET /nodes/{node}/storage/{storage}/content [--content backup|rootdir] [--vmid N]: the CTs' root
 * disks on it (a thin volume's `used` is what it holds: 18 % of its size, as storages() counts it)
 * and its backups.
 */
export function storageContent(ctx, storage, known, opts) {
	if (!known.includes(storage)) fail(`storage '${storage}' does not exist`);
	const content = opts.get('content');
	const vmid = opts.get('vmid');
	const disks = listCts(ctx)
		.filter((ct) => String(ct.rootfs ?? '').startsWith(`${storage}:`))
		.map((ct) => {
			const size = Math.round(diskGb(ct) * GiB);
			return {
				content: 'rootdir',
				ctime: 1_733_000_000,
				format: 'raw',
				size,
				...(storage === 'local-lvm' ? { used: Math.floor(size * 0.18) } : {}),
				vmid: ct.vmid,
				volid: String(ct.rootfs).split(',')[0]
			};
		});
	const backups = (loadHealth(ctx).backups?.[storage] ?? []).map((v) => ({ content: 'backup', format: v.format ?? 'tar.zst', ...v }));
	return [...(content === undefined || content === 'rootdir' ? disks : []), ...(content === undefined || content === 'backup' ? backups : [])].filter(
		(v) => vmid === undefined || String(v.vmid) === vmid
	);
}

/** GET /nodes/{node}/tasks [--errors 1] [--limit N] [--vmid N] [--typefilter T] [--since EPOCH]: newest first, without their logs. */
export function taskList(ctx, opts) {
	const errors = opts.get('errors') === '1';
	const limit = Number(opts.get('limit') ?? 50);
	const vmid = opts.get('vmid');
	const type = opts.get('typefilter');
	const since = opts.get('since') === undefined ? undefined : Number(opts.get('since'));
	return (loadHealth(ctx).tasks ?? [])
		.filter(
			(t) =>
				t.node === ctx.node &&
				(!errors || (t.status !== undefined && t.status !== 'OK')) &&
				(vmid === undefined || t.id === vmid) &&
				(type === undefined || t.type === type) &&
				(since === undefined || t.starttime >= since)
		)
		.sort((a, b) => b.starttime - a.starttime)
		.slice(0, limit)
		.map(({ log: _l, ...t }) => t);
}

function findTask(ctx, upid) {
	const t = (loadHealth(ctx).tasks ?? []).find((x) => x.upid === upid);
	// PVE::Tools::upid_decode dies "unable to parse worker upid" on a malformed one; an unknown one has no log file.
	if (!/^UPID:[^:]+:[0-9A-F]{8}:[0-9A-F]{8,9}:[0-9A-F]{8}:[^:\s]+:[^:\s]*:[^:\s]+:$/i.test(upid)) fail(`unable to parse worker upid '${upid}'`);
	if (!t) fail(`no such task`);
	return t;
}

/** GET /nodes/{node}/tasks/{upid}/status */
export function taskStatus(ctx, upid) {
	const { log: _l, status, ...t } = findTask(ctx, upid);
	return status === undefined ? { ...t, status: 'running' } : { ...t, status: 'stopped', exitstatus: status };
}

/** GET /nodes/{node}/tasks/{upid}/log [--start N] [--limit N] (PVE's default limit is 50) */
export function taskLog(ctx, upid, opts) {
	const start = Number(opts.get('start') ?? 0);
	const limit = Number(opts.get('limit') ?? 50);
	const lines = findTask(ctx, upid).log ?? [];
	return lines.slice(start, start + limit).map((t, i) => ({ n: start + i + 1, t }));
}

const hex = (n, w = 8) => (n >>> 0).toString(16).toUpperCase().padStart(w, '0');

/**
 * Records a task this node ran (a start that failed, as the real node keeps it in its task index):
 * `status` is its end (`OK` or the error its worker died with), `log` its lines; returns its UPID.
 */
export function recordTask(ctx, type, id, status, log) {
	const h = loadHealth(ctx);
	const starttime = Math.floor(Date.now() / 1000);
	const pid = 5000 + (h.tasks?.length ?? 0);
	const upid = `UPID:${ctx.node}:${hex(pid)}:${hex(1_234_567)}:${hex(starttime)}:${type}:${id}:root@pam:`;
	const task = { upid, node: ctx.node, type, id: String(id), user: 'root@pam', pid, pstart: 1_234_567, starttime, endtime: starttime, status, log };
	saveHealth(ctx, { ...h, tasks: [...(h.tasks ?? []), task] });
	return upid;
}

/** GET /cluster/backup */
export function backupJobs(ctx) {
	return loadHealth(ctx).jobs ?? [];
}

/**
 * A package-list refresh (`apt-get update`, POST /nodes/{node}/apt/update): what the mirror offers
 * (`aptRepo`, set by a test) becomes pending (`apt`), a package already pending taking the newer entry.
 */
export function refreshApt(ctx) {
	const h = loadHealth(ctx);
	if (!h.aptRepo) return;
	const offered = new Map([...(h.apt ?? []), ...h.aptRepo].map((p) => [p.Package, p]));
	const { aptRepo: _r, ...rest } = h;
	saveHealth(ctx, { ...rest, apt: [...offered.values()] });
}

/** GET /nodes/{node}/apt/update */
export function aptUpdates(ctx) {
	return (loadHealth(ctx).apt ?? []).map((p) => ({ Arch: 'amd64', Priority: 'optional', Section: 'admin', Title: p.Package, ...p }));
}

const DEFAULT_DISKS = [
	{
		devpath: '/dev/nvme0n1',
		type: 'nvme',
		model: 'Samsung SSD 980 PRO 1TB',
		serial: 'S5GXNF0R123456',
		size: 1_000_204_886_016,
		health: 'PASSED',
		wearout: 3,
		used: 'LVM',
		gpt: 1
	},
	{
		devpath: '/dev/sda',
		type: 'hdd',
		model: 'WDC WD40EFRX-68N32N0',
		serial: 'WD-WCC7K1234567',
		size: 4_000_787_030_016,
		health: 'PASSED',
		wearout: 'N/A',
		used: 'ZFS',
		gpt: 1
	}
];

/** GET /nodes/{node}/disks/list */
export function disks(ctx) {
	return loadHealth(ctx).disks ?? DEFAULT_DISKS;
}

/** GET /nodes/{node}/services: the host's units as systemctl keeps them (ssh is listed as sshd). */
export function services(ctx) {
	const units = loadUnits({ ...ctx, ct: undefined, scopeDir: ctx.state });
	return Object.entries(units)
		.map(([name, u]) => ({
			service: name === 'ssh' ? 'sshd' : name,
			name,
			desc: u.description,
			state: u.active ? 'running' : 'dead',
			'active-state': u.active ? 'active' : 'inactive',
			'sub-state': u.active ? 'running' : 'dead',
			'unit-state': u.enabled ? 'enabled' : 'disabled'
		}))
		.sort((a, b) => a.service.localeCompare(b.service));
}

/** The pools of `zpool`: { name, size, alloc, health, frag?, status? } (status: `zpool status` text of an unhealthy pool). */
export function zpools(ctx) {
	return loadHealth(ctx).zpools ?? [];
}

export const GIB = GiB;
