// Copies each pinned host's Proxmox inventory into `entities` (one transaction per host).
import { sql } from '../db/index';
import { getHostByName, listHosts, recordHostCheck, type Host } from '../db/queries/hosts';
import { hostSyncTimes, inventoryClock, recordClusterView, removeOrphanedEntities, replaceContainer, replaceHostInventory } from '../db/queries/entities';
import { readClusterView, type ClusterView } from '../proxmox/cluster';
import { readContainer, readInventory, type Inventory } from '../proxmox/inventory';
import { HostKeyError } from '../ssh/client';
import { lease } from '../ssh/pool';

export type HostSyncResult =
	| { host: string; ok: true; containers: number; removed: number; durationMs: number }
	| { host: string; ok: false; skipped: true; reason: string }
	| { host: string; ok: false; skipped?: false; error: string; durationMs: number };

/**
 * Writes one host's inventory: upserts host + containers (and, for a cluster member, its VMs and
 * its standing in the cluster), deletes vanished ones, emits the event.
 */
export async function writeInventory(hostName: string, inv: Inventory, readAt: string | null = null, cluster?: ClusterView): Promise<{ removed: number }> {
	const standing = cluster && { cluster: cluster.name, nodeStatus: 'online', quorate: cluster.quorate, seenBy: hostName };
	const vms = (cluster?.guests ?? []).filter((g) => g.type === 'qemu' && g.node === hostName);
	const rows = [
		{ kind: 'host', external_id: hostName, name: hostName, host_name: hostName, attributes: standing ? { ...inv.host.attributes, cluster: standing } : inv.host.attributes },
		...vms.map(({ type: _t, node, ...vm }) => ({ kind: 'qemu', external_id: `${hostName}/${vm.vmid}`, name: vm.name, host_name: hostName, attributes: { ...vm, node } })),
		...inv.containers.map((c) => ({
			kind: 'lxc',
			external_id: `${hostName}/${c.vmid}`,
			name: c.name,
			host_name: hostName,
			attributes: c.attributes
		}))
	];
	const result = await replaceHostInventory(sql(), hostName, rows, inv.containers.length, readAt, !!cluster);
	if (cluster) await recordClusterView(sql(), cluster);
	return result;
}

/**
 * Syncs one host over one SSH connection. Never throws for SSH/Proxmox problems: they are
 * recorded on `hosts.last_error` and returned. An unpinned host is skipped.
 */
export async function syncHost(host: Host, opts: { signal?: AbortSignal } = {}): Promise<HostSyncResult> {
	if (!host.hostKeyFingerprint) return { host: host.name, ok: false, skipped: true, reason: 'host key not pinned' };
	const started = Date.now();
	let inv: Inventory;
	let readAt: string;
	let cluster: ClusterView | undefined;
	try {
		const { client, release } = await lease(host);
		try {
			readAt = await inventoryClock(sql());
			inv = await readInventory(client, host.name, { signal: opts.signal });
			// More than one node: a cluster member, whose view of the cluster (who holds which guest,
			// which nodes are up, quorum) comes along; a standalone host costs no extra command.
			if ((inv.nodeCount ?? 1) > 1) cluster = await readClusterView(client, host.name, { signal: opts.signal });
		} finally {
			release();
		}
	} catch (e) {
		const error = (e as Error).message;
		const seen = e instanceof HostKeyError ? e.presented : host.seenFingerprint;
		await recordHostCheck(sql(), host.id, seen, error);
		return { host: host.name, ok: false, error, durationMs: Date.now() - started };
	}
	let removed: number;
	try {
		({ removed } = await writeInventory(host.name, inv, readAt, cluster));
	} catch (e) {
		const error = `saving the inventory failed: ${(e as Error).message}`;
		await recordHostCheck(sql(), host.id, host.hostKeyFingerprint, error).catch(() => undefined);
		return { host: host.name, ok: false, error, durationMs: Date.now() - started };
	}
	await recordHostCheck(sql(), host.id, host.hostKeyFingerprint, null);
	return { host: host.name, ok: true, containers: inv.containers.length, removed, durationMs: Date.now() - started };
}

/**
 * Syncs every pinned host in parallel; one result per host (unpinned hosts are skipped). What
 * the inventory still holds of hosts that are no longer configured is removed.
 */
export async function syncAllHosts(opts: { signal?: AbortSignal } = {}): Promise<HostSyncResult[]> {
	const hosts = await listHosts(sql());
	const results = await Promise.all(hosts.map((h) => syncHost(h, opts)));
	await removeOrphanedEntities(sql(), hosts.map((h) => h.name));
	return results;
}

/** Inventory older than this is refreshed before a fleet tool answers from it. */
export const INVENTORY_MAX_AGE_S = 300;

/** How fresh the inventory is per host: when it was last synced, and how long ago (null: never). */
export type Freshness = Record<string, { syncedAt: string | null; ageSeconds: number | null; error?: string }>;

/**
 * Makes sure the inventory a fleet tool answers from is real: any pinned host never synced (the
 * first sync after start may still be running) or synced longer than INVENTORY_MAX_AGE_S ago is
 * read live now. Returns each host's freshness, to be said in the answer.
 */
export async function ensureFreshInventory(maxAgeS = INVENTORY_MAX_AGE_S): Promise<Freshness> {
	const hosts = (await listHosts(sql())).filter((h) => h.hostKeyFingerprint);
	const seen = await hostSyncTimes(sql());
	const out: Freshness = {};
	await Promise.all(
		hosts.map(async (h) => {
			const synced = seen.get(h.name);
			const at = synced ? new Date(synced) : undefined;
			if (!at || Date.now() - at.getTime() > maxAgeS * 1000) {
				const r = await syncHost(h);
				if (!r.ok) out[h.name] = { syncedAt: at?.toISOString() ?? null, ageSeconds: at ? Math.round((Date.now() - at.getTime()) / 1000) : null, error: 'error' in r ? r.error : r.reason };
				else out[h.name] = { syncedAt: new Date().toISOString(), ageSeconds: 0 };
				return;
			}
			out[h.name] = { syncedAt: at.toISOString(), ageSeconds: Math.round((Date.now() - at.getTime()) / 1000) };
		})
	);
	return out;
}

/**
 * Re-reads one container of a host over SSH and writes just that entity (or removes it when it is
 * gone): what a finished action touched, before the agent looks, at the cost of two commands
 * instead of a whole-host sync. Never throws for SSH/Proxmox problems; returns the error instead.
 */
export async function refreshContainer(hostName: string, vmid: number, opts: { signal?: AbortSignal } = {}): Promise<{ ok: true; gone: boolean } | { ok: false; error: string }> {
	const host = await getHostByName(sql(), hostName);
	if (!host?.hostKeyFingerprint) return { ok: false, error: `host "${hostName}" is not configured or not pinned` };
	try {
		const { client, release } = await lease(host);
		try {
			const readAt = await inventoryClock(sql());
			const record = await readContainer(client, vmid, { signal: opts.signal });
			await replaceContainer(
				sql(),
				hostName,
				vmid,
				record && { kind: 'lxc', external_id: `${hostName}/${vmid}`, name: record.name, host_name: hostName, attributes: { ...record.attributes } },
				readAt
			);
			return { ok: true, gone: !record };
		} finally {
			release();
		}
	} catch (e) {
		return { ok: false, error: (e as Error).message };
	}
}
