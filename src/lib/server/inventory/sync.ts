// Copies each pinned host's Proxmox inventory into `entities` (one transaction per host).
import { sql } from '../db/index';
import { env } from '../env';
import { getHostByName, listHosts, recordHostCheck, type Host } from '../db/queries/hosts';
import { emitEvent } from '../db/queries/events';
import {
	hostSyncTimes,
	inventoryClock,
	listClusters,
	listLxcs,
	recordClusterView,
	removeOrphanedEntities,
	replaceGuest,
	replaceHostInventory,
	type InventoryRow
} from '../db/queries/entities';
import { checkGateOf, gateCheckDue } from '../hosts/gate';
import { ageText, answeredBy, clockTime, reachabilityOf } from '../hosts/reachability';
import { parseClusterResources, readClusterView, RESOURCES_ARGV, type ClusterGuest, type ClusterView } from '../proxmox/cluster';
import { readContainer, readInventory, runChecked, type Inventory } from '../proxmox/inventory';
import { HostKeyError } from '../ssh/client';
import { lease } from '../ssh/pool';
import { recordStorageSamples, STORAGE_ARGV, storageAttributes } from './storage-trend';

export type HostSyncResult =
	| { host: string; ok: true; containers: number; removed: number; durationMs: number }
	| { host: string; ok: false; skipped: true; reason: string }
	| { host: string; ok: false; skipped?: false; error: string; durationMs: number };

/** A VM's entity as the sync writes it, from its `/cluster/resources` row, filed under the host entry `hostName`. */
function vmRow(hostName: string, { type: _t, node, ...vm }: ClusterGuest): InventoryRow {
	return { kind: 'qemu', external_id: `${hostName}/${vm.vmid}`, name: vm.name, host_name: hostName, attributes: { ...vm, node } };
}

/** What a CT's listing (`pvesh get /nodes/<node>/lxc`) says by itself, without its config. */
const LISTED = ['status', 'cpuPercent', 'cpus', 'memUsedMb', 'memLimitMb', 'diskUsedGb', 'diskLimitGb', 'uptimeSec', 'lock'] as const;
function liveFigures(a: Record<string, unknown>): Record<string, unknown> {
	return Object.fromEntries(LISTED.filter((k) => a[k] !== undefined && a[k] !== null).map((k) => [k, a[k]]));
}

/** How long one command of an inventory read may take (NOMOS_INVENTORY_READ_S). */
export const inventoryReadMs = (): number => env().NOMOS_INVENTORY_READ_S * 1000;

/**
 * Writes one host's inventory: upserts host + containers and its VMs (from a cluster member's view,
 * or `vms`: a standalone host's `/cluster/resources` rows; a member's standing in the cluster
 * too), deletes vanished ones, emits the event. VMs are picked by the PVE node name (a standalone
 * host's entry may be named otherwise); without a VM list, the VMs it holds are left as they are.
 */
export async function writeInventory(
	hostName: string,
	inv: Inventory,
	readAt: string | null = null,
	cluster?: ClusterView,
	vms?: ClusterGuest[]
): Promise<{ removed: number }> {
	const standing = cluster && { cluster: cluster.name, nodeStatus: 'online', quorate: cluster.quorate, seenBy: hostName };
	const guests = cluster?.guests ?? vms;
	const before = inv.containers.some((c) => c.attributes.configError) ? new Map((await listLxcs(sql(), hostName)).map((e) => [e.externalId, e])) : new Map();
	const rows = [
		{
			kind: 'host',
			external_id: hostName,
			name: hostName,
			host_name: hostName,
			attributes: standing ? { ...inv.host.attributes, cluster: standing } : inv.host.attributes
		},
		...(guests ?? []).filter((g) => g.type === 'qemu' && g.node === inv.host.node).map((g) => vmRow(hostName, g)),
		...inv.containers.map((c) => {
			const external_id = `${hostName}/${c.vmid}`;
			const was = c.attributes.configError ? before.get(external_id) : undefined;
			// Its config could not be read this time: what the last read of it said is kept (marked as
			// of then), never replaced by blanks; the listing's live figures are new.
			const attributes = was
				? { ...was.attributes, ...liveFigures(c.attributes), configError: c.attributes.configError, configAsOf: was.attributes.configAsOf ?? was.seenAt }
				: c.attributes;
			return { kind: 'lxc', external_id, name: was ? was.name : c.name, host_name: hostName, attributes };
		})
	];
	const result = await replaceHostInventory(sql(), hostName, rows, inv.containers.length, readAt, !!guests);
	if (cluster) await recordClusterView(sql(), cluster);
	return result;
}

/**
 * Syncs one host over one SSH connection. Never throws for SSH/Proxmox problems: they are
 * recorded on `hosts.last_error` (with whether the host answered at all) and returned. A read that
 * fails, times out or cannot be parsed writes nothing: the guests stay as last seen (the tools say
 * how old that is); only a complete answer removes a guest. An unpinned host is skipped.
 * `timeoutMs`: per command (default NOMOS_INVENTORY_READ_S).
 */
export async function syncHost(host: Host, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<HostSyncResult> {
	if (!host.hostKeyFingerprint) return { host: host.name, ok: false, skipped: true, reason: 'host key not pinned' };
	const started = Date.now();
	const run = { signal: opts.signal, timeoutMs: opts.timeoutMs ?? inventoryReadMs() };
	let inv: Inventory;
	let readAt: string;
	let cluster: ClusterView | undefined;
	let vms: ClusterGuest[] | undefined;
	try {
		const { client, release } = await lease(host);
		let broken = true;
		try {
			readAt = await inventoryClock(sql());
			// `/cluster/resources` on a channel of its own beside the inventory's reads (no extra round
			// trip): a standalone node's VMs in one command (`qm list` + a `qm config` per VM would be
			// 1 + N), and a member's cluster view (who holds which guest, which nodes are up) reuses it.
			const resources = runChecked(client, RESOURCES_ARGV, run);
			resources.catch(() => undefined); // awaited below; unobserved when the inventory read fails first
			// The node's storage use likewise (issue #45): a failed read leaves it unknown with why, the rest syncs.
			const storage = runChecked(client, STORAGE_ARGV, run).then(
				(text) => ({ text }),
				(e: Error) => ({ error: e.message })
			);
			inv = await readInventory(client, host.name, run);
			Object.assign(inv.host.attributes, storageAttributes(await storage));
			if ((inv.nodeCount ?? 1) > 1) cluster = await readClusterView(client, host.name, run, resources);
			else {
				// A standalone host's VMs are an addition: when they cannot be read, its CTs still sync and
				// the VMs it has stay as they were, with the reason on the host.
				const node = inv.host;
				vms = await resources.then((text) => parseClusterResources(text).guests).catch((e: Error) => void (node.attributes.vmsError = e.message));
			}
			broken = false;
		} finally {
			// A connection whose read failed (a command that never answered) is not lent again.
			release(broken);
		}
	} catch (e) {
		const error = (e as Error).message;
		const seen = e instanceof HostKeyError ? e.presented : host.seenFingerprint;
		const { flipped } = await recordHostCheck(sql(), host.id, seen, error, answeredBy(e));
		if (flipped) await noteAnswerChange(host.name);
		return { host: host.name, ok: false, error, durationMs: Date.now() - started };
	}
	let removed: number;
	try {
		({ removed } = await writeInventory(host.name, inv, readAt, cluster, vms));
		const rows = inv.host.attributes.storage;
		if (Array.isArray(rows)) await recordStorageSamples(sql(), host.name, rows, readAt);
	} catch (e) {
		const error = `saving the inventory failed: ${(e as Error).message}`;
		await recordHostCheck(sql(), host.id, host.hostKeyFingerprint, error, true).catch(() => undefined);
		return { host: host.name, ok: false, error, durationMs: Date.now() - started };
	}
	if ((await recordHostCheck(sql(), host.id, host.hostKeyFingerprint, null)).flipped) await noteAnswerChange(host.name);
	// What the host's keys reach, asked again every few hours (or after they changed): the host
	// card then warns of a key that still reaches a full shell without anyone pressing a button.
	if (gateCheckDue(host)) await checkGateOf(host).catch(() => undefined);
	return { host: host.name, ok: true, containers: inv.containers.length, removed, durationMs: Date.now() - started };
}

/** A cluster member stopped or started answering Nomos: the cluster's view shows it, so it is told (`cluster.updated`). */
async function noteAnswerChange(hostName: string): Promise<void> {
	// By the clusters' node lists: a member that never answered has no host entity to say its cluster.
	const clusters = (await listClusters(sql())).filter((c) => ((c.attributes.nodes ?? []) as { node: string }[]).some((n) => n.node === hostName));
	if (!clusters.length) return;
	await sql().begin(async (tx) => {
		for (const c of clusters) await emitEvent(tx, { sessionId: null, type: 'cluster.updated', payload: { cluster: c.name } });
	});
}

/**
 * Syncs every pinned host in parallel; one result per host (unpinned hosts are skipped). What
 * the inventory still holds of hosts that are no longer configured is removed.
 */
export async function syncAllHosts(opts: { signal?: AbortSignal } = {}): Promise<HostSyncResult[]> {
	const hosts = await listHosts(sql());
	const results = await Promise.all(hosts.map((h) => syncHost(h, opts)));
	await removeOrphanedEntities(
		sql(),
		hosts.map((h) => h.name)
	);
	return results;
}

/** Inventory older than this is refreshed before a fleet tool answers from it. */
export const INVENTORY_MAX_AGE_S = 300;

/** How long a fleet tool waits for such a refresh before it answers from what is stored (the refresh goes on). */
export const INVENTORY_WAIT_MS = 20_000;

/**
 * How fresh the inventory is per host: when it was last synced and how long ago (null: never);
 * `stale` with a `note` to be said as is when what is stored may not be current (the host did not
 * answer, its read failed, or a refresh still runs).
 */
export type Freshness = Record<string, HostFreshness>;
export type HostFreshness = { syncedAt: string | null; ageSeconds: number | null; error?: string; stale?: true; note?: string; refreshing?: true };

/** Refreshes under way in this process, per host: a tool that stops waiting leaves it running, the next one joins it. */
const refreshing = new Map<string, Promise<HostSyncResult>>();

function refresh(h: Host): Promise<HostSyncResult> {
	let p = refreshing.get(h.name);
	if (!p) {
		p = syncHost(h).finally(() => refreshing.delete(h.name));
		refreshing.set(h.name, p);
	}
	return p;
}

/**
 * Makes sure the inventory a fleet tool answers from is real: any pinned host never synced (the
 * first sync after start may still be running) or synced longer than INVENTORY_MAX_AGE_S ago is
 * read live now, waiting at most `waitMs` (a slow host's read goes on in the background). Returns
 * each host's freshness, to be said in the answer; a host whose guests are not known as current is
 * `stale` with a note saying since when and why (see hostFreshness).
 */
export async function ensureFreshInventory(maxAgeS = INVENTORY_MAX_AGE_S, waitMs = INVENTORY_WAIT_MS): Promise<Freshness> {
	const hosts = (await listHosts(sql())).filter((h) => h.hostKeyFingerprint);
	const seen = await hostSyncTimes(sql());
	const out: Freshness = {};
	await Promise.all(
		hosts.map(async (h) => {
			const synced = seen.get(h.name);
			const at = synced ? new Date(synced) : undefined;
			let waiting = false;
			let readNow = false;
			if (!at || Date.now() - at.getTime() > maxAgeS * 1000) {
				let timer: NodeJS.Timeout | undefined;
				const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), waitMs)));
				const r = await Promise.race([refresh(h), late]).finally(() => clearTimeout(timer));
				waiting = r === 'late';
				readNow = r !== 'late' && r.ok;
			}
			const [host, syncedAt] = await Promise.all([getHostByName(sql(), h.name), hostSyncTimes(sql()).then((m) => m.get(h.name) ?? null)]);
			const fresh = hostFreshness(host ?? h, syncedAt, { refreshing: waiting });
			out[h.name] = readNow ? { ...fresh, ageSeconds: 0 } : fresh;
		})
	);
	return out;
}

/**
 * One host's freshness from its row and its inventory's `seen_at`: stale when its last check failed
 * after that read (no answer, or a failed read), when it was never read, or while a refresh runs.
 */
export function hostFreshness(
	host: Pick<Host, 'name' | 'lastCheckedAt' | 'lastError' | 'lastAnswerAt' | 'unansweredSince' | 'hostKeyFingerprint'>,
	syncedAt: string | null,
	opts: { refreshing?: boolean; now?: Date } = {}
): HostFreshness {
	const now = opts.now ?? new Date();
	const ageSeconds = syncedAt ? Math.max(0, Math.round((now.getTime() - new Date(syncedAt).getTime()) / 1000)) : null;
	const base: HostFreshness = { syncedAt, ageSeconds, ...(host.lastError ? { error: host.lastError } : {}) };
	const failedSince = host.lastError && host.lastCheckedAt && (!syncedAt || host.lastCheckedAt >= syncedAt);
	if (!failedSince && !opts.refreshing) return base;
	const reach = reachabilityOf({ ...host, hostKeyFingerprint: host.hostKeyFingerprint ?? null });
	const seenText = syncedAt ? `last seen ${ageText(syncedAt, now)} ago (${clockTime(syncedAt, now)})` : 'never read';
	let note: string;
	if (!failedSince) note = `${host.name}: ${seenText}; a refresh is still waiting for ${host.name} to answer`;
	else if (reach.state === 'offline') note = `${host.name}: ${seenText}; ${reach.why}`;
	else note = `${host.name}: ${seenText}; its last read failed: ${host.lastError}`;
	note += syncedAt
		? '. Its guests are shown as last seen, not as they are now: their state is unknown, and a guest missing from an old read is not known to be absent.'
		: '. Nothing is known of its guests: unknown, not none.';
	return { ...base, stale: true, note, ...(opts.refreshing ? { refreshing: true } : {}) };
}

/**
 * Re-reads one container of a host over SSH and writes just that entity (or removes it when it is
 * gone): what a finished action touched, before the agent looks, at the cost of two commands
 * instead of a whole-host sync. Never throws for SSH/Proxmox problems; returns the error instead.
 */
export async function refreshContainer(
	hostName: string,
	vmid: number,
	opts: { signal?: AbortSignal } = {}
): Promise<{ ok: true; gone: boolean } | { ok: false; error: string }> {
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
export async function refreshVm(
	hostName: string,
	vmid: number,
	opts: { signal?: AbortSignal } = {}
): Promise<{ ok: true; gone: boolean; node?: string } | { ok: false; error: string }> {
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
