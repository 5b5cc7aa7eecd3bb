// Fake `pvesm` — `status` and `list <storage>` in the real column layouts.
import { diskGb, fail, listCts, out, parseOpts } from './common.mjs';
import { storages, templates } from './model.mjs';
import { applyPrune, freeVolume, parseRetention, pruneList } from './prune.mjs';

function status(ctx, only) {
	const rows = storages(ctx).filter((s) => !only || s.storage === only);
	if (only && !rows.length) fail(`storage '${only}' does not exist`);
	const w = Math.max(...rows.map((s) => s.storage.length)) + 1;
	const fmt = (n) => String(Math.trunc(n)).padStart(15);
	out(
		`${'Name'.padEnd(w)} ${'Type'.padStart(10)} ${'Status'.padStart(10)} ${'Total'.padStart(15)} ${'Used'.padStart(15)} ${'Available'.padStart(15)} ${'%'.padStart(8)}`
	);
	for (const s of rows) {
		const pct = `${((s.used * 100) / s.total).toFixed(2).padStart(7)}%`;
		out(`${s.storage.padEnd(w)} ${s.type.padStart(10)} ${'active'.padStart(10)} ${fmt(s.total / 1024)} ${fmt(s.used / 1024)} ${fmt(s.avail / 1024)} ${pct}`);
	}
}

const TEMPLATE_FORMATS = [
	['.tar.zst', 'tzst'],
	['.tar.xz', 'txz'],
	['.tar.gz', 'tgz']
];

function volumes(ctx, storage) {
	if (storage === 'local') {
		return templates(ctx).map((volid, i) => ({
			volid,
			format: TEMPLATE_FORMATS.find(([ext]) => volid.endsWith(ext))?.[1] ?? 'raw',
			content: 'vztmpl',
			size: 126_000_000 + i * 7_340_032
		}));
	}
	if (storage === 'local-lvm') {
		return listCts(ctx)
			.filter((c) => String(c.rootfs).startsWith('local-lvm:'))
			.map((c) => ({ volid: `local-lvm:vm-${c.vmid}-disk-0`, format: 'raw', content: 'rootdir', size: diskGb(c) * 1024 ** 3, vmid: c.vmid }));
	}
	fail(`storage '${storage}' does not exist`);
}

function list(ctx, storage, content) {
	if (!storage) fail('400 not enough arguments\npvesm list <storage> [OPTIONS]');
	const all = volumes(ctx, storage).filter((v) => !content || v.content === content);
	// PVE prints guest-owned volumes first, then the rest sorted by format.
	const vols = [...all.filter((v) => v.vmid), ...all.filter((v) => !v.vmid).sort((a, b) => a.format.localeCompare(b.format))];
	const nameW = Math.max(5, ...vols.map((v) => v.volid.length));
	const sizeW = Math.max(4, ...vols.map((v) => String(v.size).length));
	const base = (a, b, c, d) => `${a.padEnd(nameW)} ${b.padEnd(7)} ${c.padEnd(9)} ${String(d).padStart(sizeW)}`;
	out(`${base('Volid', 'Format', 'Type', 'Size')} VMID`);
	for (const v of vols) out(v.vmid ? `${base(v.volid, v.format, v.content, v.size)} ${v.vmid}` : base(v.volid, v.format, v.content, v.size));
}

/**
 * `pvesm prune-backups <storage> [--dry-run 1] [--vmid N] [--type lxc|qemu] [--prune-backups keep-…]`
 * (pve-storage PVE/CLI/pvesm.pm): the dry run prints its NOTE and table; the prune itself runs
 * as a worker that logs each removal.
 */
function prune(ctx, storage, opts) {
	if (!storage) fail('400 not enough arguments\npvesm prune-backups <storage> [OPTIONS]');
	const known = storages(ctx);
	const s = known.find((x) => x.storage === storage);
	if (!s) fail(`storage '${storage}' does not exist`);
	if (!String(s.content).split(',').includes('backup')) fail(`storage '${storage}' does not support backups`);
	const retention = opts.get('prune-backups');
	// Without --prune-backups PVE uses the storage's own; the double's storages keep everything.
	const keep = retention === undefined ? { 'keep-all': 1 } : parseRetention(retention);
	const list = pruneList(ctx, storage, keep, { vmid: opts.get('vmid'), type: opts.get('type') });
	if (['1', 'true', 'yes', 'on'].includes(opts.get('dry-run') ?? '0')) {
		if (!list.length) return out('No backups found');
		out('NOTE: this is only a preview and might not be what a subsequent\nprune call does if backups are removed/added in the meantime.\n');
		const sorted = [...list].sort((a, b) => a.vmid - b.vmid || a.ctime - b.ctime);
		const w = Math.max(...sorted.map((e) => e.volid.length)) + 1;
		out(`${'Backup'.padEnd(w)} ${'Backup-ID'.padStart(15)} ${'Prune-Mark'.padStart(10)}`);
		for (const e of sorted) out(`${e.volid.padEnd(w)} ${`${e.type}/${e.vmid}`.padStart(15)} ${e.mark.padStart(10)}`);
		return;
	}
	for (const volid of applyPrune(ctx, storage, list)) out(`removing backup '${volid}'`);
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export function pvesm(ctx, args) {
	const [cmd, ...rest] = args;
	const { positional, opts } = parseOpts(rest, new Set(['dry-run']));
	if (cmd === 'status') return status(ctx, opts.get('storage'));
	if (cmd === 'list') return list(ctx, positional[0], opts.get('content'));
	if (cmd === 'prune-backups') return prune(ctx, positional[0], opts);
	if (cmd === 'free') {
		if (!positional[0]) fail('400 not enough arguments\npvesm free <volume> [OPTIONS]');
		return freeVolume(ctx, positional[0]);
	}
	fail(`ERROR: unknown command 'pvesm${cmd ? ` ${cmd}` : ''}'\nUSAGE: pvesm <COMMAND> [ARGS] [OPTIONS]`);
}
