// Backup pruning as pve-storage does it (PVE::Storage prune_mark_backup_group): the backups of one
// guest newest first, each keep-* option keeping the newest backup of each of its N newest periods
// not already kept (periods in UTC here), protected backups marked `protected` and never counted,
// the rest `remove`. Shared by `pvesm prune-backups` and `vzdump --prune-backups`.
import { fail } from './common.mjs';
import { loadHealth, saveHealth } from './health.mjs';

const KEYS = ['keep-all', 'keep-last', 'keep-hourly', 'keep-daily', 'keep-weekly', 'keep-monthly', 'keep-yearly'];

/** `keep-last=2,keep-daily=7` → { 'keep-last': 2, … }; PVE's own messages for a bad one. */
export function parseRetention(text) {
	const keep = {};
	for (const kv of String(text).split(',').filter(Boolean)) {
		const [k, v] = kv.split('=');
		if (!KEYS.includes(k))
			fail(
				`400 Parameter verification failed.\nprune-backups: invalid format - format error\nprune-backups.${k}: property is not defined in schema and the schema does not allow additional properties`
			);
		if (!/^[0-9]+$/.test(v ?? '') || (k !== 'keep-all' && Number(v) < 1))
			fail(`400 Parameter verification failed.\nprune-backups: invalid format - format error\nprune-backups.${k}: value must have a minimum value of 1`);
		keep[k] = Number(v);
	}
	return keep;
}

const isoWeek = (d) => {
	const t = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
	const day = t.getUTCDay() || 7;
	t.setUTCDate(t.getUTCDate() + 4 - day);
	const y = t.getUTCFullYear();
	return `${Math.ceil(((t.getTime() - Date.UTC(y, 0, 1)) / 86400000 + 1) / 7)}/${y}`;
};
const PERIOD = {
	'keep-last': (d) => String(d.getTime()),
	'keep-hourly': (d) => d.toISOString().slice(0, 13),
	'keep-daily': (d) => d.toISOString().slice(0, 10),
	'keep-weekly': isoWeek,
	'keep-monthly': (d) => d.toISOString().slice(0, 7),
	'keep-yearly': (d) => d.toISOString().slice(0, 4)
};

/** Marks one guest's backups: [{ volid, ctime, protected, mark }]. */
function markGroup(group, keep) {
	const list = [...group].sort((a, b) => b.ctime - a.ctime);
	const positive = Object.keys(keep).filter((k) => k !== 'keep-all' && keep[k] > 0);
	if (keep['keep-all'] || !positive.length) {
		for (const e of list) e.mark ??= 'keep';
		return list;
	}
	for (const k of KEYS.slice(1)) {
		const count = keep[k];
		if (!count) continue;
		const id = (e) => PERIOD[k](new Date(e.ctime * 1000));
		const already = new Set(list.filter((e) => e.mark === 'keep').map(id));
		const fresh = new Set();
		for (const e of list) {
			if (e.mark !== undefined || already.has(id(e))) continue;
			if (!fresh.has(id(e))) {
				if (fresh.size >= count) break;
				fresh.add(id(e));
				e.mark = 'keep';
			} else e.mark = 'remove';
		}
	}
	for (const e of list) e.mark ??= 'remove';
	return list;
}

/** The prune list of a storage as the API's dry run returns it: every standard-named backup, marked. */
export function pruneList(ctx, storage, keep, { vmid, type } = {}) {
	const vols = (loadHealth(ctx).backups?.[storage] ?? []).filter(
		(v) => (vmid === undefined || String(v.vmid) === String(vmid)) && (type === undefined || (v.subtype ?? 'lxc') === type)
	);
	const groups = new Map();
	for (const v of vols) {
		const key = `${v.subtype ?? 'lxc'}/${v.vmid}`;
		groups.set(key, [
			...(groups.get(key) ?? []),
			{ volid: v.volid, ctime: v.ctime, vmid: v.vmid, type: v.subtype ?? 'lxc', ...(Number(v.protected) === 1 ? { mark: 'protected' } : {}) }
		]);
	}
	return [...groups.values()].flatMap((g) => markGroup(g, keep));
}

/** Removes the volumes marked `remove` from the storage; returns their volids. */
export function applyPrune(ctx, storage, list) {
	const gone = new Set(list.filter((e) => e.mark === 'remove').map((e) => e.volid));
	const h = loadHealth(ctx);
	saveHealth(ctx, { ...h, backups: { ...h.backups, [storage]: (h.backups?.[storage] ?? []).filter((v) => !gone.has(v.volid)) } });
	return [...gone];
}

/** Removes one backup volume as `pvesm free` (the API's content delete) does: a protected one is refused. */
export function freeVolume(ctx, volid) {
	const storage = volid.slice(0, volid.indexOf(':'));
	const h = loadHealth(ctx);
	const vols = h.backups?.[storage] ?? [];
	const v = vols.find((x) => x.volid === volid);
	if (!v) fail(`volume '${volid}' does not exist`);
	// pve-storage Plugin.pm free_image: die "cannot remove protected volume '$volname' on '$storeid'\n"
	if (Number(v.protected) === 1) fail(`cannot remove protected volume '${volid.slice(storage.length + 1)}' on '${storage}'`);
	saveHealth(ctx, { ...h, backups: { ...h.backups, [storage]: vols.filter((x) => x.volid !== volid) } });
}
