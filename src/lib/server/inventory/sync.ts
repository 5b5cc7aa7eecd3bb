// Copies each pinned host's Proxmox inventory into `entities` (one transaction per host).
import { sql } from '../db/index';
import { getHostByName, listHosts, recordHostCheck, type Host } from '../db/queries/hosts';
import { hostSyncTimes, inventoryClock, recordClusterView, removeOrphanedEntities, replaceGuest, replaceHostInventory, type InventoryRow } from '../db/queries/entities';
import { parseClusterResources, readClusterView, RESOURCES_ARGV, type ClusterGuest, type ClusterView } from '../proxmox/cluster';
import { readContainer, readInventory, runChecked, type Inventory } from '../proxmox/inventory';
import { HostKeyError } from '../ssh/client';
import { lease } from '../ssh/pool';

export type HostSyncResult =
	| { host: string; ok: true; containers: number; removed: number; durationMs: number }
	| { host: string; ok: false; skipped: true; reason: string }
	| { host: string; ok: false; skipped?: false; error: string; durationMs: number };

/** A VM's entity as the sync writes it, from its `/cluster/resources` row, filed under the host entry `hostName`. */
function vmRow(hostName: string, { type: _t, node, ...vm }: ClusterGuest): InventoryRow {
	return { kind: 'qemu', external_id: `${hostName}/${vm.vmid}`, name: vm.name, host_name: hostName, attributes: { ...vm, node } };
}

/**
 * Writes one host's inventory: upserts host + containers and its VMs (from a cluster member's view,
 * or `vms`: a standalone host's `/cluster/resources` rows; a member's standing in the cluster
 * too), deletes vanished ones, emits the event. VMs are picked by the PVE node name (a standalone
 * host's entry may be named otherwise); without a VM list, the VMs it holds are left as they are.
 */
export async function writeInventory(hostName: string, inv: Inventory, readAt: string | null = null, cluster?: ClusterView, vms?: ClusterGuest[]): Promise<{ removed: number }> {
	const standing = cluster && { cluster: cluster.name, nodeStatus: 'online', quorate: cluster.quorate, seenBy: hostName };
	const guests = cluster?.guests ?? vms;
	const rows = [
		{ kind: 'host', external_id: hostName, name: hostName, host_name: hostName, attributes: standing ? { ...inv.host.attributes, cluster: standing } : inv.host.attributes },
		...(guests ?? []).filter((g) => g.type === 'qemu' && g.node === inv.host.node).map((g) => vmRow(hostName, g)),
		...inv.containers.map((c) => ({
			kind: 'lxc',
			external_id: `${hostName}/${c.vmid}`,
			name: c.name,
			host_name: hostName,
			attributes: c.attributes
		}))
	];
	const result = await replaceHostInventory(sql(), hostName, rows, inv.containers.length, readAt, !!guests);
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
	let vms: ClusterGuest[] | undefined;
	try {
		const { client, release } = await lease(host);
		try {
			readAt = await inventoryClock(sql());
			// `/cluster/resources` on a channel of its own beside the inventory's reads (no extra round
			// trip): a standalone node's VMs in one command (`qm list` + a `qm config` per VM would be
			// 1 + N), and a member's cluster view (who holds which guest, which nodes are up) reuses it.
			const resources = runChecked(client, RESOURCES_ARGV, { signal: opts.signal });
			resources.catch(() => undefined); // awaited below; unobserved when the inventory read fails first
			inv = await readInventory(client, host.name, { signal: opts.signal });
			if ((inv.nodeCount ?? 1) > 1) cluster = await readClusterView(client, host.name, { signal: opts.signal }, resources);
			else {
				// A standalone host's VMs are an addition: when they cannot be read, its CTs still sync and
				// the VMs it has stay as they were, with the reason on the host.
				const node = inv.host;
				vms = await resources
					.then((text) => parseClusterResources(text).guests)
					.catch((e: Error) => void (node.attributes.vmsError = e.message));
			}
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
		({ removed } = await writeInventory(host.name, inv, readAt, cluster, vms));
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
			await replaceGuest(
				sql(),
				hostName,
				'lxc',
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

/**
 * Re-reads one VM of a host (one command: `/cluster/resources`, the rows the sync writes VMs from)
 * and writes just that entity: removed when it is gone, and when the cluster lists it on another
 * node (a migration), filed under that node's host entry at once, when there is one. Never throws
 * for SSH/Proxmox problems; returns the error instead.
 */
export async function refreshVm(hostName: string, vmid: number, opts: { signal?: AbortSignal } = {}): Promise<{ ok: true; gone: boolean; node?: string } | { ok: false; error: string }> {
	const host = await getHostByName(sql(), hostName);
	if (!host?.hostKeyFingerprint) return { ok: false, error: `host "${hostName}" is not configured or not pinned` };
	try {
		const { client, release } = await lease(host);
		let readAt: string;
		let view: ReturnType<typeof parseClusterResources>;
		try {
			readAt = await inventoryClock(sql());
			view = parseClusterResources(await runChecked(client, RESOURCES_ARGV, { signal: opts.signal }));
		} finally {
			release();
		}
		// A standalone node's entry may be named otherwise than its node; a member's is named as its node.
		const node = view.nodes.length === 1 ? view.nodes[0].node : hostName;
		const vm = view.guests.find((g) => g.type === 'qemu' && g.vmid === vmid);
		await replaceGuest(sql(), hostName, 'qemu', vmid, vm?.node === node ? vmRow(hostName, vm) : null, readAt);
		if (vm && vm.node !== node && (await getHostByName(sql(), vm.node))) await replaceGuest(sql(), vm.node, 'qemu', vmid, vmRow(vm.node, vm), readAt);
		return { ok: true, gone: vm?.node !== node, node: vm?.node };
	} catch (e) {
		return { ok: false, error: (e as Error).message };
	}
}
