import { tool } from 'ai';
import { ensureFreshInventory } from '../../inventory/sync';
import { z } from 'zod';
import { sql } from '../../db/index';
import { entityKinds, entityRef, listEntities, type Entity } from '../../db/queries/entities';
import { toolError, type ToolContext } from './context';
import { fleetTruth, guestStale, type HostTruth } from './fleet-truth';
import { clockTime } from '../../hosts/reachability';

const LIMIT = 100;

export const listEntitiesInput = z
	.object({
		kind: z
			.string()
			.regex(/^[a-z][a-z0-9_-]{0,31}$/)
			.optional()
			.describe('host, lxc, …'),
		query: z.string().min(1).max(200).optional()
	})
	.strict();

/**
 * A cluster member's standing (offline, no quorum) when it forbids commands, else null; a
 * cluster's own status lists its nodes (`quorate: pve1 online, pve2 offline, pve3 online (no host entry)`).
 */
export function clusterStatus(e: Entity, truth?: Map<string, HostTruth>): string | null {
	const a = e.attributes;
	if (e.kind === 'cluster') {
		const nodes = (a.nodes ?? []) as { node: string; status: string; host: boolean }[];
		const standing = (n: (typeof nodes)[number]) => {
			const reach = truth?.get(n.node)?.reach;
			// A member the view calls online but that Nomos cannot reach is offline/unknown for Nomos.
			if (n.status === 'online' && reach?.state === 'offline') {
				return `${n.node} offline/unknown (${reach.lastAnswerAt ? `not answering Nomos since ${clockTime(reach.lastAnswerAt)}` : 'never answered Nomos'})`;
			}
			return `${n.node} ${n.status}${n.host ? '' : ' (no host entry)'}`;
		};
		return `${a.quorate ? 'quorate' : 'no quorum'}: ${nodes.map(standing).join(', ')}`;
	}
	if (e.kind !== 'host') return null;
	const c = a.cluster as { nodeStatus?: string; quorate?: boolean; seenBy?: string } | undefined;
	if (c && c.nodeStatus !== 'online') return `${c.nodeStatus ?? 'unknown'} (seen from ${c.seenBy}): nothing is sent to it; its guests are unknown, not absent`;
	const reach = truth?.get(e.externalId)?.reach;
	if (reach?.state === 'offline') return `offline/unknown: ${reach.why}; nothing is sent to it, and its guests are unknown, not absent`;
	if (!c) return null;
	if (!c.quorate) return 'no quorum: changes are refused';
	return null;
}

/** One line per entity, for listings; a guest of a host that did not answer says so (`stale`). */
export function entitySummary(e: Entity, truth?: Map<string, HostTruth>) {
	const a = e.attributes;
	const stale = e.kind === 'lxc' || e.kind === 'qemu' ? guestStale(truth?.get(e.hostName ?? ''), e.seenAt) : null;
	return {
		id: e.id,
		ref: entityRef(e),
		kind: e.kind,
		name: e.name,
		host: e.hostName,
		status: (stale
			? `unknown now (was ${typeof a.status === 'string' ? a.status : 'unknown'})`
			: (clusterStatus(e, truth) ?? a.status ?? a.pveStatus ?? null)) as string | null,
		...(stale ? { stale } : {}),
		syncedAt: e.seenAt
	};
}

/** `list_entities(kind?, query?)`: the known inventory (hosts, containers, …) with refs to pass on. */
export function listEntitiesTool(_ctx: ToolContext) {
	return tool({
		description: 'Inventory entities (hosts, containers, services) by kind and/or query, each with its ref (lxc:strong/101) for get_entity.',
		inputSchema: listEntitiesInput,
		execute: async ({ kind, query }) => {
			const truth = await fleetTruth(await ensureFreshInventory());
			if (kind) {
				const kinds = await entityKinds(sql());
				if (!kinds.some((k) => k.kind === kind)) {
					const known = kinds.map((k) => `${k.kind} (${k.count})`).join(', ');
					return toolError(
						`no entities of kind "${kind}"`,
						known ? `Known kinds: ${known}. Omit kind to search all.` : 'The inventory is empty: no host has been synced yet.'
					);
				}
			}
			const rows = await listEntities(sql(), { kind, query, limit: LIMIT + 1 });
			const entities = rows.slice(0, LIMIT).map((e) => entitySummary(e, truth));
			return {
				count: entities.length,
				truncated: rows.length > LIMIT,
				entities,
				...(entities.length === 0 && query ? { hint: 'No match. Try a shorter query, or omit it to list everything.' } : {})
			};
		}
	});
}
