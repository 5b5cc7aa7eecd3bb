import { tool } from 'ai';
import { ensureFreshInventory } from '../../inventory/sync';
import { z } from 'zod';
import { sql } from '../../db/index';
import { entityRef, listEntities, resolveEntity, type Entity } from '../../db/queries/entities';
import { formatUptime } from '../../proxmox/inventory';
import { toolError, type ToolContext, type ToolError } from './context';
import { fleetTruth, guestStale } from './fleet-truth';

export const getEntityInput = z
	.object({
		id: z.string().min(1).max(200)
	})
	.strict();

/** Up to `max` known refs, e.g. `host:strong, lxc:strong/101 (caddy)`, for hints. */
export async function knownRefs(kind?: string, max = 30): Promise<string> {
	const rows = await listEntities(sql(), { kind, limit: max + 1 });
	if (rows.length === 0) return kind ? `no ${kind} entities are known yet` : 'the inventory is empty (no host synced yet)';
	const refs = rows.slice(0, max).map((e) => (e.externalId === e.name ? entityRef(e) : `${entityRef(e)} (${e.name})`));
	return refs.join(', ') + (rows.length > max ? ', …' : '');
}

/** The error a tool returns for an unknown or ambiguous reference. */
export async function unresolvedError(what: string, r: { reason: 'not_found' | 'ambiguous'; candidates: Entity[] }, kind?: string): Promise<ToolError> {
	if (r.reason === 'ambiguous') {
		const list = r.candidates.map((e) => `${entityRef(e)} (${e.name})`).join(', ');
		return toolError(`"${what}" matches ${r.candidates.length} entities`, `Use one exact ref: ${list}.`);
	}
	return toolError(
		`no ${kind ?? 'entity'} "${what}"`,
		`Use a uuid or a ref like lxc:<host>/<vmid>, host:<name> or lxc:<name>. Known: ${await knownRefs(kind)}.`
	);
}

/** The full view of one entity (`stale`: its host did not answer since it was read). */
export function entityDetail(e: Entity, stale: string | null = null) {
	const uptimeSec = e.attributes.uptimeSec;
	return {
		...(stale ? { stale } : {}),
		id: e.id,
		ref: entityRef(e),
		kind: e.kind,
		externalId: e.externalId,
		name: e.name,
		host: e.hostName,
		attributes: e.attributes,
		...(typeof uptimeSec === 'number' ? { uptime: formatUptime(uptimeSec) } : {}),
		notes: e.notes,
		syncedAt: e.seenAt,
		changedAt: e.updatedAt
	};
}

/** `get_entity(id)`: one entity with all stored attributes and notes. */
export function getEntityTool(_ctx: ToolContext) {
	return tool({
		description: 'One inventory entity with all its attributes and notes, by uuid or ref (lxc:strong/101, host:strong, lxc:<name>).',
		inputSchema: getEntityInput,
		execute: async ({ id }) => {
			const truth = await fleetTruth(await ensureFreshInventory());
			const r = await resolveEntity(sql(), id);
			if (!r.ok) return unresolvedError(id, r);
			const e = r.entity;
			const host = truth.get(e.hostName ?? (e.kind === 'host' ? e.externalId : ''));
			const stale = e.kind === 'host' ? (host?.stale ?? null) : guestStale(host, e.seenAt);
			return entityDetail(e, stale);
		}
	});
}
