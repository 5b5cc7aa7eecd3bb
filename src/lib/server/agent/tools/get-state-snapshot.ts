import { tool } from 'ai';
import { z } from 'zod';
import { placeGuest } from '../../inventory/placement';
import { ensureFreshInventory } from '../../inventory/sync';
import { sql } from '../../db/index';
import { fleetSnapshot, listEntities, type Entity, type FleetHost } from '../../db/queries/entities';
import { clusterStatus } from './list-entities';
import { formatUptime } from '../../proxmox/inventory';
import type { ToolContext } from './context';
import { lxcRow } from './list-lxcs';
import { fleetTruth, guestStale, type HostTruth } from './fleet-truth';
import { clockTime } from '../../hosts/reachability';
import { storageLines, storageTrends } from '../../inventory/storage-trend';

export const getStateSnapshotInput = z.object({}).strict();

/** `101 caddy running cpu 1.1% mem 102/1024MB up 1h 0m ip 10.0.0.5` (with `— last seen … ago; …` when its host did not answer) */
function ctLine(e: Entity, truth?: HostTruth): string {
	const r = lxcRow(e);
	const stale = guestStale(truth, e.seenAt);
	if (stale) return `${r.vmid ?? '?'} ${r.name} unknown now (was ${r.status}) — ${stale}`;
	const parts = [`${r.vmid ?? '?'} ${r.name} ${r.status}`];
	if (r.status === 'running') {
		parts.push(`cpu ${r.cpuPercent ?? '?'}%`, `mem ${r.memUsedMb ?? '?'}/${r.memLimitMb ?? '?'}MB`, `up ${r.uptime}`);
	} else if (r.memLimitMb !== null) parts.push(`mem limit ${r.memLimitMb}MB`);
	parts.push(r.ips.length ? `ip ${r.ips.join(',')}` : `ip ${r.ipMode}`);
	if (typeof e.attributes.lock === 'string') parts.push(`locked (${e.attributes.lock})`);
	return parts.join(' ');
}

function hostStatus(h: FleetHost, truth?: HostTruth): string {
	if (!h.pinned) return 'unpinned';
	const standing = h.entity && clusterStatus(h.entity, truth && new Map([[h.name, truth]]));
	if (standing) return standing;
	if (truth?.reach.state === 'offline') return `offline/unknown: ${truth.reach.why}; nothing is sent to it, and its guests are unknown, not absent`;
	if (truth?.stale) return `stale: ${truth.stale}`;
	if (h.lastError) return 'error';
	if (!h.entity) return 'not synced';
	const status = h.entity.attributes.pveStatus;
	return typeof status === 'string' || typeof status === 'number' ? String(status) : 'unknown';
}

/** The per-host summary get_state_snapshot returns. */
export function hostSummary(h: FleetHost, truth?: HostTruth, trends: Map<string, string> = new Map()) {
	const a = h.entity?.attributes ?? {};
	const count = (s: string) => h.containers.filter((c) => c.attributes.status === s).length;
	const running = count('running');
	const stopped = count('stopped');
	return {
		name: h.name,
		status: hostStatus(h, truth),
		...(a.cluster ? { cluster: (a.cluster as { cluster: string }).cluster } : {}),
		...(h.lastError ? { lastError: h.lastError } : {}),
		syncedAt: h.entity?.seenAt ?? null,
		cpuPercent: a.cpuPercent ?? null,
		cpus: a.maxcpu ?? null,
		memUsedMb: a.memUsedMb ?? null,
		memLimitMb: a.memLimitMb ?? null,
		uptime: typeof a.uptimeSec === 'number' ? formatUptime(a.uptimeSec) : null,
		// Per storage: use, free and trend (a host that did not answer: as last read, see status).
		...(h.entity ? { storage: storageLines(a, trends) } : {}),
		containers: { total: h.containers.length, running, stopped, other: h.containers.length - running - stopped },
		cts: h.containers.map((c) => ctLine(c, truth))
	};
}

/**
 * Where a new or moved guest would go when the operator names no node: Nomos's pick (most free
 * memory among the online nodes) with its reason, and each node's free memory, CPU and storages,
 * read live from a member. In this tool's output, not a tool of its own: nothing in the first
 * request pays for it.
 */
async function placement() {
	const p = await placeGuest({});
	if ('error' in p) return p;
	return {
		node: p.node,
		reason: p.reason,
		nodes: p.nodes.map((n) =>
			n.status === 'online'
				? `${n.node} online: ${n.freeMemMb} MiB free of ${n.totalMemMb}, CPU ${n.cpuPct}% of ${n.cpus}; storage ${n.storages.map((s) => `${s.storage} ${s.availGb}G${s.shared ? ' shared' : ''}`).join(', ') || 'none'}`
				: `${n.node} ${n.status}: not a candidate; its load and guests are unknown`
		)
	};
}

/** A cluster's guest line; a guest of a node that is down or does not answer Nomos is unknown, never absent. */
function clusterGuestLine(g: { type: string; vmid: number; node: string; name: string; status: string }, down: Map<string, string>): string {
	const why = down.get(g.node);
	return why ? `${g.type}:${g.node}/${g.vmid} ${g.name} unknown (${why}; last listed ${g.status})` : `${g.type}:${g.node}/${g.vmid} ${g.name} ${g.status}`;
}

/** `get_state_snapshot()`: the whole fleet summarised in one call. */
export function getStateSnapshotTool(_ctx: ToolContext) {
	return tool({
		description: 'The whole fleet in one call: per host status, CPU, memory, storage and one line per container.',
		inputSchema: getStateSnapshotInput,
		execute: async () => {
			const inventoryAsOf = await ensureFreshInventory();
			const { hosts } = await fleetSnapshot(sql());
			const truth = await fleetTruth(inventoryAsOf);
			const trends = await Promise.all(hosts.map((h) => storageTrends(sql(), h.name)));
			const summaries = hosts.map((h, i) => hostSummary(h, truth.get(h.name), trends[i]));
			// Only with a cluster configured: its nodes (down ones, ones without a host entry) and which node holds which guest.
			const clusters = (await listEntities(sql(), { kind: 'cluster' })).map((c) => {
				const nodes = (c.attributes.nodes ?? []) as { node: string; status: string; offlineSince?: string }[];
				const down = new Map<string, string>();
				for (const n of nodes) {
					const reach = truth.get(n.node)?.reach;
					if (reach?.state === 'offline') down.set(n.node, `${n.node} offline: ${reach.why}`);
					else if (n.status !== 'online') down.set(n.node, `${n.node} ${n.status}${n.offlineSince ? ` since ${clockTime(n.offlineSince)}` : ''}`);
				}
				return {
					name: c.name,
					status: clusterStatus(c, truth),
					guests: ((c.attributes.guests ?? []) as { type: string; vmid: number; node: string; name: string; status: string }[]).map((g) =>
						clusterGuestLine(g, down)
					)
				};
			});
			const sum = (k: 'total' | 'running' | 'stopped') => summaries.reduce((t, h) => t + h.containers[k], 0);
			return {
				inventoryAsOf,
				generatedAt: new Date().toISOString(),
				totals: { hosts: hosts.length, containers: sum('total'), running: sum('running'), stopped: sum('stopped') },
				hosts: summaries,
				...(clusters.length ? { clusters, placement: await placement() } : {})
			};
		}
	});
}
