import type { Fragment, TransactionSql } from 'postgres';
import type { Sql } from '../index';
import { emitEvent } from './events';
import type { entities, hosts } from '../schema';

/** An entity row without its generated search vector. Timestamps are ISO 8601 text. */
export type Entity = Omit<typeof entities.$inferSelect, 'search'>;

const columns = (sql: Sql | TransactionSql) =>
	sql`id, kind, external_id as "externalId", name, host_name as "hostName", attributes, notes,
		seen_at as "seenAt", updated_at as "updatedAt"`;

/** Containers by numeric vmid (a non-numeric one sorts last). */
const byVmid = (sql: Sql | TransactionSql) => sql`case when attributes->>'vmid' ~ '^[0-9]+$' then (attributes->>'vmid')::bigint end`;
const order = (sql: Sql | TransactionSql) => sql`kind, host_name, ${byVmid(sql)}, name`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The short reference the tools show: `host:strong`, `lxc:strong/101`. */
export const entityRef = (e: Pick<Entity, 'kind' | 'externalId'>): string => `${e.kind}:${e.externalId}`;

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => '\\' + c);

/**
 * Entities, optionally of one kind and matching `query`: a case-insensitive substring of the
 * name or external id, or a full-text match on name + notes.
 */
export async function listEntities(sql: Sql | TransactionSql, opts: { kind?: string; query?: string; limit?: number } = {}): Promise<Entity[]> {
	const q = opts.query?.trim();
	const like = q ? `%${likeEscape(q)}%` : '';
	return sql<Entity[]>`
		select ${columns(sql)} from entities
		where true
		${opts.kind ? sql`and kind = ${opts.kind}` : sql``}
		${q ? sql`and (name ilike ${like} or external_id ilike ${like} or search @@ websearch_to_tsquery('english', ${q}))` : sql``}
		order by ${order(sql)}
		limit ${opts.limit ?? 500}`;
}

/** Distinct entity kinds with counts (for hints). */
export async function entityKinds(sql: Sql | TransactionSql): Promise<{ kind: string; count: number }[]> {
	return sql<{ kind: string; count: number }[]>`select kind, count(*)::int as count from entities group by kind order by kind`;
}

export type ResolveResult = { ok: true; entity: Entity } | { ok: false; reason: 'not_found' | 'ambiguous'; candidates: Entity[] };

/**
 * Resolves a uuid, `kind:externalId` (`lxc:strong/101`, `host:strong`), `kind:name`
 * (`lxc:caddy`), `lxc:<vmid>`, or a bare external id / name. Names match case-insensitively.
 */
export async function resolveEntity(sql: Sql | TransactionSql, idOrRef: string): Promise<ResolveResult> {
	const ref = idOrRef.trim();
	const found = (rows: Entity[]): ResolveResult | null =>
		rows.length === 1 ? { ok: true, entity: rows[0] } : rows.length > 1 ? { ok: false, reason: 'ambiguous', candidates: rows } : null;
	const select = (where: Fragment) => sql<Entity[]>`select ${columns(sql)} from entities where ${where} order by ${order(sql)} limit 20`;

	if (UUID.test(ref)) return found(await select(sql`id = ${ref}`)) ?? { ok: false, reason: 'not_found', candidates: [] };

	const m = /^([a-z][a-z0-9_-]*):(.+)$/i.exec(ref);
	const kind = m ? m[1].toLowerCase() : undefined;
	const rest = m ? m[2].trim() : ref;
	const ofKind = kind ? sql`and kind = ${kind}` : sql``;
	const attempts = [sql`external_id = ${rest} ${ofKind}`, sql`lower(name) = lower(${rest}) ${ofKind}`];
	if (/^\d+$/.test(rest)) attempts.push(sql`attributes->>'vmid' = ${rest} ${ofKind}`);
	for (const where of attempts) {
		const r = found(await select(where));
		if (r) return r;
	}
	return { ok: false, reason: 'not_found', candidates: [] };
}

/** One entity by uuid or ref (see `resolveEntity`); null when unknown or ambiguous. */
export async function getEntity(sql: Sql | TransactionSql, idOrRef: string): Promise<Entity | null> {
	const r = await resolveEntity(sql, idOrRef);
	return r.ok ? r.entity : null;
}

/** Every container, optionally on one host, ordered by host then vmid. */
export async function listLxcs(sql: Sql | TransactionSql, host?: string): Promise<Entity[]> {
	return sql<Entity[]>`
		select ${columns(sql)} from entities
		where kind = 'lxc' ${host ? sql`and host_name = ${host}` : sql``}
		order by host_name, ${byVmid(sql)}, name`;
}

export interface FleetHost {
	name: string;
	address: string | null;
	pinned: boolean;
	/** ISO 8601 */
	lastCheckedAt: string | null;
	lastError: string | null;
	/** the host entity (null until its first successful sync) */
	entity: Entity | null;
	containers: Entity[];
}

/** Every configured host (and any host known only from entities) with its containers. */
export async function fleetSnapshot(sql: Sql | TransactionSql): Promise<{ hosts: FleetHost[] }> {
	const [hostRows, rows] = await Promise.all([
		sql<(Pick<typeof hosts.$inferSelect, 'name' | 'address' | 'port' | 'lastCheckedAt' | 'lastError'> & { pinned: boolean })[]>`
			select name, address, port, host_key_fingerprint is not null as pinned,
				last_checked_at as "lastCheckedAt", last_error as "lastError"
			from hosts order by name`,
		sql<Entity[]>`
			select ${columns(sql)} from entities
			where kind = 'host' or kind = 'lxc'
			order by host_name, ${byVmid(sql)}`
	]);
	const byName = new Map<string, FleetHost>();
	for (const h of hostRows) {
		byName.set(h.name, {
			name: h.name,
			address: `${h.address}:${h.port}`,
			pinned: h.pinned,
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

/** When each host's inventory was last written (its host entity's seen_at, ISO 8601). */
export async function hostSyncTimes(sql: Sql | TransactionSql): Promise<Map<string, string>> {
	const rows = await sql<{ name: string; at: string }[]>`select external_id as name, seen_at as at from entities where kind = 'host'`;
	return new Map(rows.map((r) => [r.name, r.at]));
}

/** Removes hosts and containers of hosts that are no longer configured. */
export async function removeOrphanedEntities(sql: Sql | TransactionSql, hostNames: string[]): Promise<number> {
	const r = await sql`
		delete from entities
		where (kind = 'host' and external_id <> all(${hostNames}::text[]))
			or (kind in ('lxc', 'qemu') and host_name is not null and host_name <> all(${hostNames}::text[]))`;
	return r.count;
}

/** Arbitrary namespace for the per-host advisory lock that serialises concurrent syncs. */
const SYNC_LOCK_NS = 7_140_202;

/**
 * Takes the per-host lock every inventory write of that host holds until its transaction ends,
 * and says whether the host is still configured: a sync that read a host being removed then
 * writes nothing, and a removal waits for a write under way (and then deletes what it wrote).
 */
export async function lockHostInventory(tx: TransactionSql, hostName: string): Promise<boolean> {
	await tx`select pg_advisory_xact_lock(${SYNC_LOCK_NS}, hashtext(${hostName}))`;
	const [{ configured }] = await tx<{ configured: boolean }[]>`select exists (select 1 from hosts where name = ${hostName}) as configured`;
	return configured;
}

/** One entity as an inventory sync writes it. */
/** An entity as a read writes it, in the table's own column names (the upsert reads them from JSON). */
export type InventoryRow = {
	kind: Entity['kind'];
	external_id: Entity['externalId'];
	name: Entity['name'];
	host_name: NonNullable<Entity['hostName']>;
	attributes: Entity['attributes'];
};

/**
 * The database's clock now: a sync or a refresh takes it before its first command on the host, and
 * its rows carry it as `seen_at` (when Nomos saw them), so the later read wins, not the later write.
 */
export async function inventoryClock(sql: Sql | TransactionSql): Promise<string> {
	const [r] = await sql<{ at: string }[]>`select clock_timestamp() as at`;
	return r.at;
}

/**
 * Upserts entities as a read at `readAt` saw them: an entity is only overwritten by a read that
 * started at or after the one it holds (a whole-host sync that began before a container was
 * re-read must not put back what it saw then); `seen_at` is when it was read, `updated_at` moves
 * only when the name or the attributes changed.
 */
async function upsertEntities(tx: TransactionSql, rows: InventoryRow[], readAt: string): Promise<void> {
	// A later read found it gone (destroyed meanwhile): this older view does not bring it back;
	// one that read after that clears the mark (the id was used again).
	await tx`
			delete from entity_gone g using jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) as r(kind text, external_id text)
			where g.kind = r.kind and g.external_id = r.external_id and g.gone_at <= ${readAt}::timestamptz`;
	await tx`
			insert into entities (kind, external_id, name, host_name, attributes, seen_at, updated_at)
			select r.kind, r.external_id, r.name, r.host_name, r.attributes, ${readAt}::timestamptz, now()
			from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb)
				as r(kind text, external_id text, name text, host_name text, attributes jsonb)
			where not exists (select 1 from entity_gone g where g.kind = r.kind and g.external_id = r.external_id)
			on conflict (kind, external_id) do update set
				name = excluded.name,
				host_name = excluded.host_name,
				attributes = excluded.attributes,
				seen_at = excluded.seen_at,
				updated_at = case
					when entities.name is distinct from excluded.name
						or entities.attributes is distinct from excluded.attributes
					then now() else entities.updated_at end
			where entities.seen_at <= excluded.seen_at`;
}

/** Remembers guests (CTs or VMs) a read at `readAt` found gone (see entity_gone). */
async function markGone(tx: TransactionSql, kind: GuestKind, externalIds: string[], readAt: string): Promise<void> {
	if (!externalIds.length) return;
	await tx`
		insert into entity_gone (kind, external_id, gone_at)
		select ${kind}, x, ${readAt}::timestamptz from unnest(${externalIds}::text[]) x
		on conflict (kind, external_id) do update set gone_at = greatest(entity_gone.gone_at, excluded.gone_at)`;
}

/** The entity kinds of guests: a container, a VM. */
export type GuestKind = 'lxc' | 'qemu';

/**
 * Writes one host's inventory in one transaction: upserts the host and its containers (touching
 * `updated_at` only when something changed), deletes the host's vanished containers, and emits
 * `inventory.synced`. Concurrent syncs of one host are serialised.
 */
export async function replaceHostInventory(
	sql: Sql,
	hostName: string,
	rows: InventoryRow[],
	containers: number,
	read: string | null = null,
	/** the read listed the host's VMs too (a cluster member's sync): vanished `qemu` rows go as well */
	vmsRead = false
): Promise<{ removed: number }> {
	const keep = rows.filter((r) => r.kind === 'lxc' || r.kind === 'qemu').map((r) => r.external_id);
	return sql.begin(async (tx) => {
		if (!(await lockHostInventory(tx, hostName))) return { removed: 0 };
		// Rows written without a read of their own (seeders) count as read now.
		const readAt = read ?? (await inventoryClock(tx));
		// Two whole-host reads of one host can overlap (a tool's inline sync beside the queued one):
		// when one that read later has written already, this older view adds nothing.
		const [newer] = await tx<{ newer: boolean }[]>`
			select seen_at > ${readAt}::timestamptz as newer from entities where kind = 'host' and external_id = ${hostName}`;
		if (newer?.newer) return { removed: 0 };
		await upsertEntities(tx, rows, readAt);
		// Vanished: not in this read, and not seen by a read that started after it (a container
		// created meanwhile and read back by its refresh stays).
		const removed = await tx`
			delete from entities
			where (kind = 'lxc' or (${vmsRead} and kind = 'qemu')) and host_name = ${hostName}
				and external_id not in (select jsonb_array_elements_text(${JSON.stringify(keep)}::text::jsonb))
				and seen_at <= ${readAt}::timestamptz
			returning kind, external_id`;
		for (const kind of ['lxc', 'qemu'] as const)
			await markGone(
				tx,
				kind,
				removed.filter((r) => r.kind === kind).map((r) => r.external_id as string),
				readAt
			);
		await tx`delete from entity_gone where gone_at < now() - interval '1 hour'`;
		await emitEvent(tx, { sessionId: null, type: 'inventory.synced', payload: { host: hostName, containers } });
		return { removed: removed.count };
	});
}

/**
 * Writes one guest (a CT, or a VM) as read live (null: it is gone from this host) without touching
 * the rest of the host's inventory, and emits `inventory.synced` naming it. Serialised with full
 * syncs of the host.
 */
export async function replaceGuest(
	sql: Sql,
	hostName: string,
	kind: GuestKind,
	vmid: number,
	row: InventoryRow | null,
	read: string | null = null
): Promise<void> {
	await sql.begin(async (tx) => {
		if (!(await lockHostInventory(tx, hostName))) return;
		const readAt = read ?? (await inventoryClock(tx));
		if (row) {
			await upsertEntities(tx, [row], readAt);
		} else {
			const id = `${hostName}/${vmid}`;
			await tx`delete from entities where kind = ${kind} and external_id = ${id} and seen_at <= ${readAt}::timestamptz`;
			// Gone as of this read, whether or not a row said otherwise (a sync may be about to write
			// what it listed before); not when a later read saw it (its row stayed).
			const [{ seen }] = await tx<{ seen: boolean }[]>`select exists (select 1 from entities where kind = ${kind} and external_id = ${id}) as seen`;
			if (!seen) await markGone(tx, kind, [id], readAt);
		}
		const guest = kind === 'lxc' ? { container: vmid } : { vm: vmid };
		await emitEvent(tx, { sessionId: null, type: 'inventory.synced', payload: { host: hostName, ...guest, gone: !row } });
	});
}

/** How a cluster member stands, as the last quorate view (or its own view) said: kept on its host entity. */
export interface NodeStanding {
	cluster: string;
	/** online | offline */
	nodeStatus: string;
	quorate: boolean;
	/** the member whose view this is */
	seenBy: string;
}

/** A node as the `cluster` entity keeps it: its standing, and its load when it was online. */
export interface ClusterNodeFacts {
	node: string;
	/** online | offline */
	status: string;
	/** a host entry of that name exists */
	host: boolean;
	/** when a quorate view first saw it offline (kept while it stays offline) */
	offlineSince?: string;
	freeMemMb?: number;
	totalMemMb?: number;
	cpuPct?: number;
	cpus?: number;
	uptimeSec?: number;
}

type ClusterViewInput = {
	name: string;
	readFrom: string;
	quorate: boolean;
	nodes: ({ node: string; status: string } & Partial<Omit<ClusterNodeFacts, 'node' | 'status' | 'host' | 'offlineSince'>>)[];
	guests: { type: string; vmid: number; node: string; name: string; status: string; template?: boolean }[];
};

/** The `cluster` entity's attributes. */
export interface ClusterFacts {
	/** the last view recorded was quorate (only a quorate view replaces nodes and guests) */
	quorate: boolean;
	readFrom: string;
	nodes: ClusterNodeFacts[];
	guests: { type: string; vmid: number; node: string; name: string; status: string; template?: true }[];
	/** members that last read the cluster from outside a quorate partition (`Quorate: No`), with since when */
	outOfQuorum?: { node: string; since: string }[];
}

/**
 * What the operator's cluster view shows apart from load figures (which move on every read):
 * when this changes, `cluster.updated` is emitted.
 */
function standingKey(a: Partial<ClusterFacts> | null): string {
	if (!a) return '';
	const nodes = (a.nodes ?? []).map((n) => [n.node, n.status, n.host, n.offlineSince ?? null]);
	const guests = (a.guests ?? []).map((g) => [g.type, g.vmid, g.node, g.name]);
	return JSON.stringify([a.quorate, nodes, guests, (a.outOfQuorum ?? []).map((m) => m.node).sort()]);
}

/**
 * Records a cluster view read from one member. A quorate view is the cluster's truth: it is kept
 * as the `cluster` entity and every configured member's host entity gets its standing. A view from
 * a member without quorum only marks that member (on its host entity, and in the cluster's
 * `outOfQuorum` list, until a quorate view sees it online again): its view of the others is its
 * own isolation. A node seen offline keeps the moment a quorate view first saw it so
 * (`offlineSince`). Emits `cluster.updated` when what the operator sees changed (nodes, quorum,
 * who holds which guest; not the load figures).
 */
export async function recordClusterView(sql: Sql, view: ClusterViewInput): Promise<void> {
	const standing = (node: string, status: string): NodeStanding => ({
		cluster: view.name,
		nodeStatus: status,
		quorate: view.quorate && status === 'online',
		seenBy: view.readFrom
	});
	await sql.begin(async (tx) => {
		const [prev] = await tx<{ attributes: Partial<ClusterFacts>; now: string }[]>`
			select attributes, now() as now from entities where kind = 'cluster' and external_id = ${view.name} for update`;
		const [{ now }] = prev ? [prev] : await tx<{ now: string }[]>`select now() as now`;
		const wasOut = prev?.attributes.outOfQuorum ?? [];
		let attributes: Partial<ClusterFacts> | null;
		const standings: [string, NodeStanding][] = [];
		let configured: Set<string> | null = null;
		if (!view.quorate) {
			standings.push([view.readFrom, standing(view.readFrom, 'online')]);
			attributes = prev && {
				...prev.attributes,
				outOfQuorum: wasOut.some((m) => m.node === view.readFrom) ? wasOut : [...wasOut, { node: view.readFrom, since: now }]
			};
		} else {
			const hostNames = new Set((await tx<{ name: string }[]>`select name from hosts`).map((h) => h.name));
			configured = hostNames;
			const before = new Map((prev?.attributes.nodes ?? []).map((n) => [n.node, n]));
			const nodes: ClusterNodeFacts[] = view.nodes.map((n) => {
				const was = before.get(n.node);
				const offlineSince = n.status === 'online' ? undefined : was && was.status !== 'online' ? (was.offlineSince ?? now) : now;
				return { ...n, host: hostNames.has(n.node), ...(offlineSince ? { offlineSince } : {}) };
			});
			// A member this partition sees online is in it, hence quorate again.
			const online = new Set(nodes.filter((n) => n.status === 'online').map((n) => n.node));
			attributes = {
				quorate: true,
				readFrom: view.readFrom,
				nodes,
				guests: view.guests.map((g) => ({
					type: g.type,
					vmid: g.vmid,
					node: g.node,
					name: g.name,
					status: g.status,
					...(g.template ? { template: true as const } : {})
				})),
				...(wasOut.some((m) => !online.has(m.node)) ? { outOfQuorum: wasOut.filter((m) => !online.has(m.node)) } : {})
			};
			for (const n of view.nodes) standings.push([n.node, standing(n.node, n.status)]);
		}
		if (attributes && !view.quorate) {
			// Not a read of the cluster's truth: its `seen_at` stays the last quorate read's.
			await tx`update entities set attributes = ${JSON.stringify(attributes)}::text::jsonb, updated_at = now() where kind = 'cluster' and external_id = ${view.name}`;
		} else if (attributes) {
			await tx`
				insert into entities (kind, external_id, name, host_name, attributes, seen_at, updated_at)
				values ('cluster', ${view.name}, ${view.name}, null, ${JSON.stringify(attributes)}::text::jsonb, now(), now())
				on conflict (kind, external_id) do update set attributes = excluded.attributes, seen_at = now(),
					updated_at = case when entities.attributes is distinct from excluded.attributes then now() else entities.updated_at end`;
		}
		for (const [node, s] of standings) {
			await tx`update entities set attributes = attributes || ${JSON.stringify({ cluster: s })}::text::jsonb where kind = 'host' and external_id = ${node}`;
		}
		if (attributes && standingKey(prev?.attributes ?? null) !== standingKey(attributes)) {
			await emitEvent(tx, { sessionId: null, type: 'cluster.updated', payload: { cluster: view.name } });
		}
		if (configured)
			await followMovedGuests(
				tx,
				view.nodes.map((n) => n.node),
				view.guests,
				configured
			);
	});
}

/**
 * A guest the cluster lists on another node than the member its entity is filed under has moved
 * (a migration, by Nomos or behind its back): its entity follows at once instead of at the next
 * syncs. It goes to the new node's host entry when there is one — with what the last read of it
 * said (and that read's `seen_at`, so any real read of the new node wins) and the view's status —
 * and leaves the old one either way, marked gone there so an older read does not bring it back.
 */
async function followMovedGuests(
	tx: TransactionSql,
	members: string[],
	guests: { type: string; vmid: number; node: string; status: string }[],
	configured: Set<string>
): Promise<void> {
	const listed = guests.map((g) => ({ kind: g.type, vmid: g.vmid, node: g.node, status: g.status }));
	const moved = await tx<{ kind: GuestKind; external_id: string; host_name: string; vmid: number; node: string }[]>`
		select e.kind, e.external_id, e.host_name, v.vmid, v.node
		from entities e join jsonb_to_recordset(${JSON.stringify(listed)}::text::jsonb) as v(kind text, vmid int, node text, status text)
			on v.kind = e.kind and e.external_id = e.host_name || '/' || v.vmid
		where e.kind in ('lxc', 'qemu') and e.host_name = any(${members}::text[]) and e.host_name <> v.node`;
	if (!moved.length) return;
	// The per-host inventory locks of both ends, in one order (two views recorded at once must not deadlock).
	const hosts = [...new Set(moved.flatMap((m) => [m.host_name, m.node]))].sort();
	for (const h of hosts) await tx`select pg_advisory_xact_lock(${SYNC_LOCK_NS}, hashtext(${h}))`;
	const at = await inventoryClock(tx);
	for (const m of moved) {
		const id = `${m.node}/${m.vmid}`;
		if (configured.has(m.node)) {
			await tx`delete from entity_gone where kind = ${m.kind} and external_id = ${id}`;
			await tx`
				insert into entities (kind, external_id, name, host_name, attributes, seen_at, updated_at)
				select e.kind, ${id}, e.name, ${m.node},
					e.attributes || jsonb_build_object('status', v.status) || case when e.kind = 'qemu' then jsonb_build_object('node', ${m.node}::text) else '{}'::jsonb end,
					e.seen_at, now()
				from entities e, jsonb_to_recordset(${JSON.stringify(listed.filter((g) => g.kind === m.kind && g.vmid === m.vmid))}::text::jsonb) as v(status text)
				where e.kind = ${m.kind} and e.external_id = ${m.external_id}
				on conflict (kind, external_id) do nothing`;
		}
		await tx`delete from entities where kind = ${m.kind} and external_id = ${m.external_id}`;
		await markGone(tx, m.kind, [m.external_id], at);
		const guest = m.kind === 'lxc' ? { container: m.vmid } : { vm: m.vmid };
		await emitEvent(tx, { sessionId: null, type: 'inventory.synced', payload: { host: m.host_name, ...guest, gone: true } });
		if (configured.has(m.node)) await emitEvent(tx, { sessionId: null, type: 'inventory.synced', payload: { host: m.node, ...guest } });
	}
}

/** Every recorded cluster (`cluster` entities), by name. */
export async function listClusters(sql: Sql | TransactionSql): Promise<Entity[]> {
	return sql<Entity[]>`select ${columns(sql)} from entities where kind = 'cluster' order by name`;
}

/**
 * The cluster a configured host belongs to, as last recorded: by its own standing, else (a member
 * that never answered Nomos, so never synced itself) by a recorded cluster that lists it as a node,
 * as the member that was read saw it. Null: a standalone host.
 */
export async function clusterOfHost(
	sql: Sql | TransactionSql,
	hostName: string
): Promise<{ name: string; standing: NodeStanding; members: string[]; offlineSince: string | null } | null> {
	const [row] = await sql<{ standing: NodeStanding | null; nodes: ClusterNodeFacts[] | null }[]>`
		select h.attributes->'cluster' as standing, c.attributes->'nodes' as nodes
		from entities h left join entities c on c.kind = 'cluster' and c.external_id = h.attributes->'cluster'->>'cluster'
		where h.kind = 'host' and h.external_id = ${hostName}`;
	if (row?.standing) {
		const nodes = row.nodes ?? [];
		return {
			name: row.standing.cluster,
			standing: row.standing,
			members: nodes.filter((n) => n.host).map((n) => n.node),
			offlineSince: nodes.find((n) => n.node === hostName)?.offlineSince ?? null
		};
	}
	const [listed] = await sql<{ name: string; quorate: boolean | null; readFrom: string | null; nodes: ClusterNodeFacts[] }[]>`
		select c.external_id as name, (c.attributes->>'quorate')::boolean as quorate, c.attributes->>'readFrom' as "readFrom", c.attributes->'nodes' as nodes
		from entities c
		where c.kind = 'cluster' and exists (select 1 from jsonb_array_elements(c.attributes->'nodes') n where n->>'node' = ${hostName})
		order by c.updated_at desc limit 1`;
	if (!listed) return null;
	const node = listed.nodes.find((n) => n.node === hostName)!;
	return {
		name: listed.name,
		standing: { cluster: listed.name, nodeStatus: node.status, quorate: listed.quorate ?? false, seenBy: listed.readFrom ?? '' },
		members: listed.nodes.filter((n) => n.host).map((n) => n.node),
		offlineSince: node.offlineSince ?? null
	};
}
