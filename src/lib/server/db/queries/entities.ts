import { and, asc, eq, ilike, or, sql as dsql, type SQL } from 'drizzle-orm';
import { db, type Sql } from '../index';
import { entities, hosts } from '../schema';

/** An entity row without its generated search vector. */
export type Entity = Omit<typeof entities.$inferSelect, 'search'>;

const cols = {
	id: entities.id,
	kind: entities.kind,
	externalId: entities.externalId,
	name: entities.name,
	hostName: entities.hostName,
	attributes: entities.attributes,
	notes: entities.notes,
	seenAt: entities.seenAt,
	updatedAt: entities.updatedAt
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const byVmid = dsql`case when ${entities.attributes}->>'vmid' ~ '^[0-9]+$' then (${entities.attributes}->>'vmid')::bigint end`;
const order = [asc(entities.kind), asc(entities.hostName), byVmid, asc(entities.name)];

/** The short reference the tools show: `host:strong`, `lxc:strong/101`. */
export const entityRef = (e: Pick<Entity, 'kind' | 'externalId'>): string => `${e.kind}:${e.externalId}`;

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => '\\' + c);

/**
 * Entities, optionally of one kind and matching `query`: a case-insensitive substring of the
 * name or external id, or a full-text match on name + notes.
 */
export async function listEntities(opts: { kind?: string; query?: string; limit?: number } = {}): Promise<Entity[]> {
	const where: (SQL | undefined)[] = [];
	if (opts.kind) where.push(eq(entities.kind, opts.kind));
	const q = opts.query?.trim();
	if (q) {
		const like = `%${likeEscape(q)}%`;
		where.push(
			or(
				ilike(entities.name, like),
				ilike(entities.externalId, like),
				dsql`${entities.search} @@ websearch_to_tsquery('english', ${q})`
			)
		);
	}
	return db()
		.select(cols)
		.from(entities)
		.where(and(...where))
		.orderBy(...order)
		.limit(opts.limit ?? 500);
}

/** Distinct entity kinds with counts (for hints). */
export async function entityKinds(): Promise<{ kind: string; count: number }[]> {
	return db()
		.select({ kind: entities.kind, count: dsql<number>`count(*)::int` })
		.from(entities)
		.groupBy(entities.kind)
		.orderBy(asc(entities.kind));
}

export type ResolveResult =
	| { ok: true; entity: Entity }
	| { ok: false; reason: 'not_found' | 'ambiguous'; candidates: Entity[] };

/**
 * Resolves a uuid, `kind:externalId` (`lxc:strong/101`, `host:strong`), `kind:name`
 * (`lxc:caddy`), `lxc:<vmid>`, or a bare external id / name. Names match case-insensitively.
 */
export async function resolveEntity(idOrRef: string): Promise<ResolveResult> {
	const ref = idOrRef.trim();
	const found = (rows: Entity[]): ResolveResult | null =>
		rows.length === 1 ? { ok: true, entity: rows[0] } : rows.length > 1 ? { ok: false, reason: 'ambiguous', candidates: rows } : null;
	const select = (where: SQL | undefined) => db().select(cols).from(entities).where(where).orderBy(...order).limit(20);

	if (UUID.test(ref)) return found(await select(eq(entities.id, ref))) ?? { ok: false, reason: 'not_found', candidates: [] };

	const m = /^([a-z][a-z0-9_-]*):(.+)$/i.exec(ref);
	const kind = m ? m[1].toLowerCase() : undefined;
	const rest = m ? m[2].trim() : ref;
	const ofKind = kind ? eq(entities.kind, kind) : undefined;
	const attempts: (SQL | undefined)[] = [
		and(ofKind, eq(entities.externalId, rest)),
		and(ofKind, dsql`lower(${entities.name}) = lower(${rest})`)
	];
	if (/^\d+$/.test(rest)) attempts.push(and(ofKind, dsql`${entities.attributes}->>'vmid' = ${rest}`));
	for (const where of attempts) {
		const r = found(await select(where));
		if (r) return r;
	}
	return { ok: false, reason: 'not_found', candidates: [] };
}

/** One entity by uuid or ref (see `resolveEntity`); null when unknown or ambiguous. */
export async function getEntity(idOrRef: string): Promise<Entity | null> {
	const r = await resolveEntity(idOrRef);
	return r.ok ? r.entity : null;
}

/** Every container, optionally on one host, ordered by host then vmid. */
export async function listLxcs(host?: string): Promise<Entity[]> {
	return db()
		.select(cols)
		.from(entities)
		.where(and(eq(entities.kind, 'lxc'), host ? eq(entities.hostName, host) : undefined))
		.orderBy(asc(entities.hostName), byVmid, asc(entities.name));
}

export interface FleetHost {
	name: string;
	address: string | null;
	pinned: boolean;
	lastCheckedAt: Date | null;
	lastError: string | null;
	/** the host entity (null until its first successful sync) */
	entity: Entity | null;
	containers: Entity[];
}

/** Every configured host (and any host known only from entities) with its containers. */
export async function fleetSnapshot(): Promise<{ hosts: FleetHost[] }> {
	const [hostRows, rows] = await Promise.all([
		db().select().from(hosts).orderBy(asc(hosts.name)),
		db()
			.select(cols)
			.from(entities)
			.where(or(eq(entities.kind, 'host'), eq(entities.kind, 'lxc')))
			.orderBy(asc(entities.hostName), byVmid)
	]);
	const byName = new Map<string, FleetHost>();
	for (const h of hostRows) {
		byName.set(h.name, {
			name: h.name,
			address: `${h.address}:${h.port}`,
			pinned: h.hostKeyFingerprint !== null,
			lastCheckedAt: h.lastCheckedAt,
			lastError: h.lastError,
			entity: null,
			containers: []
		});
	}
	for (const e of rows) {
		const name = e.hostName ?? (e.kind === 'host' ? e.externalId : '(unknown host)');
		let h = byName.get(name);
		if (!h) {
			h = { name, address: null, pinned: false, lastCheckedAt: null, lastError: null, entity: null, containers: [] };
			byName.set(name, h);
		}
		if (e.kind === 'host') h.entity = e;
		else h.containers.push(e);
	}
	return { hosts: [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)) };
}

/** When each host's inventory was last written (its host entity's seen_at). */
export async function hostSyncTimes(sql: Sql): Promise<Map<string, Date>> {
	const rows = await sql<{ name: string; at: Date }[]>`select external_id as name, seen_at as at from entities where kind = 'host'`;
	return new Map(rows.map((r) => [r.name, new Date(r.at)]));
}

/** Removes hosts and containers of hosts that are no longer configured. */
export async function removeOrphanedEntities(sql: Sql, hostNames: string[]): Promise<number> {
	const r = await sql`
		delete from entities
		where (kind = 'host' and external_id <> all(${hostNames}::text[]))
			or (kind = 'lxc' and host_name is not null and host_name <> all(${hostNames}::text[]))`;
	return r.count;
}
