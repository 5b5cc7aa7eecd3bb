import { tool } from 'ai';
import { z } from 'zod';
import { sql } from '../../db/index';
import { fleetSnapshot, listLxcs, type Entity } from '../../db/queries/entities';
import { formatUptime } from '../../proxmox/inventory';
import { ensureFreshInventory } from '../../inventory/sync';
import { toolError, type ToolContext } from './context';
import { fleetTruth, guestStale } from './fleet-truth';

export const listLxcsInput = z.object({ host: z.string().min(1).max(64).optional() }).strict();

const n = (v: unknown): number | null => (typeof v === 'number' ? v : null);

/** The per-container row list_lxcs returns. */
export function lxcRow(e: Entity) {
	const a = e.attributes;
	const uptimeSec = n(a.uptimeSec) ?? 0;
	return {
		vmid: n(a.vmid),
		name: e.name,
		host: e.hostName,
		status: typeof a.status === 'string' ? a.status : 'unknown',
		cpuPercent: n(a.cpuPercent),
		memUsedMb: n(a.memUsedMb),
		memLimitMb: n(a.memLimitMb),
		uptime: formatUptime(uptimeSec),
		uptimeSec,
		ips: Array.isArray(a.ips) ? (a.ips as string[]) : [],
		ipMode: typeof a.ipMode === 'string' ? a.ipMode : 'none',
		syncedAt: e.seenAt
	};
}

/** `list_lxcs(host?)`: every container (or one host's) in one call, with sync freshness. */
export function listLxcsTool(_ctx: ToolContext) {
	return tool({
		description: "Every container (or one host's) with vmid, name, status, CPU %, memory, uptime and IPs, from the inventory synced each minute.",
		inputSchema: listLxcsInput,
		execute: async ({ host }) => {
			const inventoryAsOf = await ensureFreshInventory();
			const fleet = await fleetSnapshot(sql());
			if (host && !fleet.hosts.some((h) => h.name === host)) {
				const names = fleet.hosts.map((h) => h.name);
				return toolError(`unknown host "${host}"`, names.length ? `Known hosts: ${names.join(', ')}. Omit host to list all.` : 'No hosts are configured yet.');
			}
			const truth = await fleetTruth(inventoryAsOf);
			// A guest of a host that did not answer is shown as last seen, and says so: never as current.
			const rows = (await listLxcs(sql(), host)).map((e) => {
				const stale = guestStale(truth.get(e.hostName ?? ''), e.seenAt);
				const row = lxcRow(e);
				return stale ? { ...row, status: `unknown now (was ${row.status})`, stale } : row;
			});
			const warnings = fleet.hosts
				.filter((h) => !host || h.name === host)
				.map((h) =>
					!h.pinned
						? `${h.name}: host key not pinned; not synced`
						: (inventoryAsOf[h.name]?.note ?? (h.lastError ? `${h.name}: last sync failed (${h.lastError})` : null))
				)
				.filter((w): w is string => !!w);
			return { count: rows.length, containers: rows, inventoryAsOf, ...(warnings.length ? { warnings } : {}) };
		}
	});
}
