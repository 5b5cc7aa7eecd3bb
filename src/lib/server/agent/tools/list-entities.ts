import { tool } from 'ai';
import { ensureFreshInventory } from '../../inventory/sync';
import { z } from 'zod';
import { sql } from '../../db/index';
import { entityKinds, entityRef, listEntities, type Entity } from '../../db/queries/entities';
import { toolError, type ToolContext } from './context';

const LIMIT = 100;

export const listEntitiesInput = z
	.object({
		kind: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/).optional().describe('host, lxc, …'),
		query: z.string().min(1).max(200).optional()
	})
	.strict();

/**
 * A cluster member's standing (offline, no quorum) when it forbids commands, else null; a
 * cluster's own status lists its nodes (`quorate: pve1 online, pve2 offline, pve3 online (no host entry)`).
 */
export function clusterStatus(e: Entity): string | null {
	const a = e.attributes;
	if (e.kind === 'cluster') {
		const nodes = (a.nodes ?? []) as { node: string; status: string; host: boolean }[];
		return `${a.quorate ? 'quorate' : 'no quorum'}: ${nodes.map((n) => `${n.node} ${n.status}${n.host ? '' : ' (no host entry)'}`).join(', ')}`;
	}
	const c = a.cluster as { nodeStatus?: string; quorate?: boolean; seenBy?: string } | undefined;
	if (e.kind !== 'host' || !c) return null;
	if (c.nodeStatus !== 'online') return `${c.nodeStatus ?? 'unknown'} (seen from ${c.seenBy}): nothing is sent to it`;
	if (!c.quorate) return 'no quorum: changes are refused';
	return null;
}

/** One line per entity, for listings. */
export function entitySummary(e: Entity) {
	const a = e.attributes;
	return {
		id: e.id,
		ref: entityRef(e),
		kind: e.kind,
		name: e.name,
		host: e.hostName,
		status: (clusterStatus(e) ?? a.status ?? a.pveStatus ?? null) as string | null,
		syncedAt: e.seenAt
	};
}

/** `list_entities(kind?, query?)`: the known inventory (hosts, containers, …) with refs to pass on. */
export function listEntitiesTool(_ctx: ToolContext) {
	return tool({
		description:
			'Inventory entities (hosts, containers, services), filtered by kind and/or query (name, id or words of their notes). ' +
			'Each has a ref (lxc:strong/101) for get_entity.',
		inputSchema: listEntitiesInput,
		execute: async ({ kind, query }) => {
			await ensureFreshInventory();
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
			const entities = rows.slice(0, LIMIT).map(entitySummary);
			return {
				count: entities.length,
				truncated: rows.length > LIMIT,
				entities,
				...(entities.length === 0 && query ? { hint: 'No match. Try a shorter query, or omit it to list everything.' } : {})
			};
		}
	});
}
