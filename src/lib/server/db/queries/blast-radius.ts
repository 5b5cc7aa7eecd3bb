import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { BlastRadius } from '../../../types/blast-radius';

/** Inventory keys that describe the container itself, not what it points at. */
const OWN_KEYS = ['ips', 'hostname', 'hwaddr', 'bridge', 'ipMode', 'status', 'ostype', 'lock', 'configError', 'features'];

/** How many notes, referencing containers and containers on a host are listed (all are counted). */
const LIST_LIMIT = 25;

/**
 * What depends on an execution's target, in one statement: its state in the inventory, the units
 * Nomos has run or checked inside it (executions of `systemctl`/`service_status`; the inventory
 * lists no units), knowledge notes that mention it, other containers whose config strings or
 * inventory notes name its IP or hostname, and for a host the containers on it.
 *
 * "Mentions" is a full-text match on lexemes, through the GIN index: an IP is one token to
 * Postgres's parser (`10.0.0.1` never matches `10.0.0.10`), a vmid matches `101`, `ct101` or
 * `strong/101`, a name matches as an English phrase or as the first label of a host name
 * (`caddy.lan:443`). Null when there is no such execution.
 */
export async function blastRadius(sql: Sql | TransactionSql, executionId: string): Promise<BlastRadius | null> {
	const [row] = await sql<{ radius: BlastRadius }[]>`
		with tgt as (
			select x.id, x.target,
				case when x.target like 'lxc:%' then 'lxc' when x.target like 'host:%' then 'host' else 'other' end as kind,
				regexp_replace(x.target, '^[a-z]+:', '') as ext
			from executions x where x.id = ${executionId}
		),
		ent as (
			select e.* from entities e join tgt on e.kind = tgt.kind and e.external_id = tgt.ext
		),
		-- The words the target is known by. Lexemes are built only from strings that cannot break
		-- the tsquery syntax (digits, dots, colons, lowercase names); names go through phraseto_tsquery.
		ident_raw as (
			select 'CT ' || split_part(tgt.ext, '/', 2) as label, 'vmid' as what, split_part(tgt.ext, '/', 2) as word
			from tgt where tgt.kind = 'lxc'
			union all
			select ip, 'ip', ip from ent,
				jsonb_array_elements_text(case when jsonb_typeof(ent.attributes -> 'ips') = 'array' then ent.attributes -> 'ips' else '[]' end) ip
			union all
			select h.address, 'ip', h.address from hosts h join tgt on tgt.kind = 'host' and h.name = tgt.ext
			union all
			select n, 'name', n from (
				select ent.name as n from ent
				union select ent.attributes ->> 'hostname' from ent
				union select tgt.ext from tgt where tgt.kind = 'host'
			) names where n is not null and n <> ''
		),
		ident as (
			select distinct on (label) label, what,
				case what
					when 'vmid' then format('''%s'' | ''ct%s'' | ''%s''', word, word, lower((select ext from tgt)))::tsquery
					when 'ip' then format('''%s''', word)::tsquery
					else case when lower(word) ~ '^[a-z0-9][a-z0-9-]*$'
						then phraseto_tsquery('english', word) || format('''%s.'':*', lower(word))::tsquery
						else phraseto_tsquery('english', word) end
				end as q
			from ident_raw
			where (what = 'vmid' and word ~ '^[0-9]{3,9}$' and (select ext from tgt) ~ '^[A-Za-z0-9.-]+/[0-9]+$')
				or (what = 'ip' and word ~ '^[0-9]{1,3}(\.[0-9]{1,3}){3}$')
				or what = 'name'
			order by label
		),
		-- Every identifier OR-ed (for the index), and only the IPs and host names for other containers.
		anyq as (
			select (select string_agg('(' || q::text || ')', ' | ') from ident where numnode(q) > 0)::tsquery as q,
				(select string_agg('(' || q::text || ')', ' | ') from ident where numnode(q) > 0 and what <> 'vmid')::tsquery as refq
		),
		note_hits as (
			select k.id, k.title, ts_rank_cd(k.search, anyq.q) as rank,
				(select array_agg(i.label order by i.label) from ident i where numnode(i.q) > 0 and k.search @@ i.q) as matched
			from knowledge k, anyq
			where anyq.q is not null and k.search @@ anyq.q
		),
		others as (
			select o.kind, o.external_id, o.name, o.attributes ->> 'status' as status,
				jsonb_to_tsvector('english', o.attributes - ${OWN_KEYS}::text[], '["string"]') as cfg,
				to_tsvector('english', o.notes) as nts
			from entities o
			where o.kind = 'lxc' and not exists (select 1 from ent where ent.id = o.id)
		),
		ref_hits as (
			select o.kind || ':' || o.external_id as ref, o.name, o.status,
				array_remove(array[case when o.cfg @@ anyq.refq then 'config' end, case when o.nts @@ anyq.refq then 'notes' end], null) as "where",
				(select array_agg(i.label order by i.label) from ident i
					where i.what <> 'vmid' and numnode(i.q) > 0 and (o.cfg @@ i.q or o.nts @@ i.q)) as matched
			from others o, anyq
			where anyq.refq is not null and (o.cfg @@ anyq.refq or o.nts @@ anyq.refq)
		),
		services as (
			select distinct on (x.params ->> 'unit') x.params ->> 'unit' as unit,
				x.action || coalesce(' ' || (x.params ->> 'op'), '') as "lastAction", x.status as "lastStatus", x.created_at as created
			from executions x join tgt on x.target = tgt.target
			where x.action in ('systemctl', 'service_status') and x.params ? 'unit' and x.id <> tgt.id
			order by x.params ->> 'unit', x.created_at desc
		),
		cts as (
			select c.kind || ':' || c.external_id as ref, c.name, c.attributes ->> 'status' as status,
				case when c.attributes ->> 'vmid' ~ '^[0-9]+$' then (c.attributes ->> 'vmid')::bigint end as vmid
			from entities c join tgt on tgt.kind = 'host' and c.kind in ('lxc', 'qemu') and c.host_name = tgt.ext
		)
		select json_build_object(
			'executionId', tgt.id,
			'target', tgt.target,
			'kind', tgt.kind,
			'known', exists (select 1 from ent),
			'name', (select name from ent),
			'status', (select coalesce(attributes ->> 'status', attributes ->> 'pveStatus') from ent),
			'seenAt', (select to_char(seen_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') from ent),
			'identifiers', coalesce((select json_agg(label order by what desc, label) from ident where numnode(q) > 0), '[]'),
			'services', coalesce((select json_agg(json_build_object('unit', unit, 'lastAction', "lastAction", 'lastStatus', "lastStatus",
				'at', to_char(created at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) order by unit) from (select * from services limit ${LIST_LIMIT}) s), '[]'),
			'notes', coalesce((select json_agg(json_build_object('id', id, 'title', title, 'matched', matched) order by rank desc, title)
				from (select * from note_hits order by rank desc, title limit ${LIST_LIMIT}) n), '[]'),
			'notesTotal', (select count(*) from note_hits),
			'referencedBy', coalesce((select json_agg(json_build_object('ref', ref, 'name', name, 'status', status, 'where', "where", 'matched', matched) order by ref)
				from (select * from ref_hits order by ref limit ${LIST_LIMIT}) r), '[]'),
			'referencedByTotal', (select count(*) from ref_hits),
			'containers', coalesce((select json_agg(json_build_object('ref', ref, 'name', name, 'status', status) order by vmid, ref)
				from (select * from cts order by vmid, ref limit ${LIST_LIMIT}) c), '[]'),
			'containersTotal', (select count(*) from cts),
			'containersRunning', (select count(*) from cts where status = 'running')
		) as radius
		from tgt`;
	return row?.radius ?? null;
}
