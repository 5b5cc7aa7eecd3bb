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

/** One line per entity, for listings. */
export function entitySummary(e: Entity) {
	const a = e.attributes;
	return {
		id: e.id,
		ref: entityRef(e),
		kind: e.kind,
		name: e.name,
		host: e.hostName,
		status: (a.status ?? a.pveStatus ?? null) as string | null,
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
