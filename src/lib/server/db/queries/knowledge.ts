import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { knowledge } from '../schema';

/** One note as the app shows it (its row less the search vector); timestamps are ISO strings so tRPC and load data agree. */
export type KnowledgeNote = Omit<typeof knowledge.$inferSelect, 'search'>;

export type KnowledgeSource = KnowledgeNote['source'];

/** A list row: the note without its body, plus a short plain preview. */
export type KnowledgeSummary = Omit<KnowledgeNote, 'body'> & { preview: string };

export type KnowledgeInput = Pick<KnowledgeNote, 'title' | 'body'>;

export type SearchResult = {
	kind: 'knowledge' | 'entity';
	id: string;
	/** Note title, or the entity's name. */
	title: string;
	/** A note's source ('page' | 'file' | 'inventory'), or the entity's kind (e.g. 'qemu'). */
	source: string;
	/** The entity's external id (e.g. a vmid); null for notes. */
	externalId: string | null;
	/** Matched terms are wrapped in « and »; fragments are joined with " … ". */
	snippet: string;
	rank: number;
};

const noteColumns = (sql: Sql | TransactionSql) =>
	sql`id, title, body, source, source_path as "sourcePath", created_at as "createdAt", updated_at as "updatedAt"`;

/** Every note, most recently updated first, without bodies. */
export async function listKnowledge(sql: Sql | TransactionSql): Promise<KnowledgeSummary[]> {
	return sql<KnowledgeSummary[]>`
		select id, title, source, source_path as "sourcePath", created_at as "createdAt", updated_at as "updatedAt",
			left(regexp_replace(body, '[[:space:]]+', ' ', 'g'), 240) as preview
		from knowledge
		order by updated_at desc, title`;
}

export async function getKnowledge(sql: Sql | TransactionSql, id: string): Promise<KnowledgeNote | null> {
	const [row] = await sql<KnowledgeNote[]>`select ${noteColumns(sql)} from knowledge where id = ${id}`;
	return row ?? null;
}

/** Creates an operator-written note (source 'page'). */
export async function createKnowledge(sql: Sql | TransactionSql, input: KnowledgeInput): Promise<KnowledgeNote> {
	const [row] = await sql<KnowledgeNote[]>`
		insert into knowledge (title, body, source) values (${input.title}, ${input.body}, 'page')
		returning ${noteColumns(sql)}`;
	return row;
}

/**
 * Updates a 'page' note. Returns null when there is no such note, 'read-only' when it exists
 * but came from a file or the inventory (those are rewritten by their importer).
 */
export async function updateKnowledge(sql: Sql | TransactionSql, id: string, input: KnowledgeInput): Promise<KnowledgeNote | 'read-only' | null> {
	const [row] = await sql<KnowledgeNote[]>`
		update knowledge set title = ${input.title}, body = ${input.body}, updated_at = now()
		where id = ${id} and source = 'page'
		returning ${noteColumns(sql)}`;
	if (row) return row;
	return (await getKnowledge(sql, id)) ? 'read-only' : null;
}

/** Deletes a 'page' note; same results as updateKnowledge (true when deleted). */
export async function deleteKnowledge(sql: Sql | TransactionSql, id: string): Promise<true | 'read-only' | null> {
	const rows = await sql`delete from knowledge where id = ${id} and source = 'page' returning id`;
	if (rows.length) return true;
	return (await getKnowledge(sql, id)) ? 'read-only' : null;
}

/** `%q%` for ILIKE, with the pattern characters in q taken literally. */
function likePattern(q: string): string {
	return `%${q.replace(/[\\%_]/g, (c) => '\\' + c)}%`;
}

/**
 * Full-text search over notes (title + body) and entities (name + notes), in one statement.
 *
 * Tiers, each used only when the one before found nothing:
 *  1. `websearch_to_tsquery` (all words, "phrases", -not, or), or `plainto_tsquery` when the
 *     websearch form has no lexemes;
 *  2. any of the query's words (an OR query), so a long natural question still finds notes;
 *  3. ILIKE on the raw text: queries with no lexemes (stop words only) or parts of words
 *     ("vm10", "0.0.5").
 * An entity whose external id (or its last `/`/`:` segment, or attributes.vmid) equals the query,
 * e.g. a vmid like "101", always matches and ranks first.
 * Ranked with `ts_rank_cd` (normalised to 0..1; titles and names weigh more than bodies).
 */
export async function searchKnowledge(sql: Sql | TransactionSql, query: string, limit = 8): Promise<SearchResult[]> {
	const q = query.trim();
	if (!q) return [];
	const pattern = likePattern(q);
	const max = Math.max(1, Math.min(50, Math.floor(limit)));
	const rows = await sql<
		{ kind: 'knowledge' | 'entity'; id: string; title: string; source: string; externalId: string | null; snippet: string; rank: number; tier: number }[]
	>`
		with input as (
			select websearch_to_tsquery('english', ${q}) as w, plainto_tsquery('english', ${q}) as p
		),
		queries as (
			select
				case when numnode(w) > 0 then w else p end as strict,
				(
					select string_agg('''' || replace(lex, '''', '''''') || '''', ' | ')
					from unnest(tsvector_to_array(to_tsvector('english', ${q}))) as lex
				)::tsquery as loose
			from input
		),
		docs as not materialized (
			select 'knowledge'::text as kind, k.id, k.title, k.source, null::text as external_id,
				k.search, k.body as text,
				(k.title ilike ${pattern} or k.body ilike ${pattern}) as like_hit,
				false as exact_hit
			from knowledge k
			union all
			select 'entity', e.id, e.name, e.kind, e.external_id,
				e.search, e.notes,
				(e.name ilike ${pattern} or e.notes ilike ${pattern} or e.external_id ilike ${pattern}),
				lower(e.external_id) = lower(${q})
					or right(lower(e.external_id), ${q.length + 1}) in (${'/' + q.toLowerCase()}, ${':' + q.toLowerCase()})
					or e.attributes ->> 'vmid' = ${q}
			from entities e
		),
		tier1 as (
			select d.*, ts_rank_cd(d.search, qs.strict, 32) + (case when d.exact_hit then 1 else 0 end) as rank,
				qs.strict as hq, 1 as tier
			from docs d, queries qs
			where (numnode(qs.strict) > 0 and d.search @@ qs.strict) or d.exact_hit
		),
		tier2 as (
			select d.*, ts_rank_cd(d.search, qs.loose, 32) as rank, qs.loose as hq, 2 as tier
			from docs d, queries qs
			where not exists (select 1 from tier1) and qs.loose is not null and d.search @@ qs.loose
		),
		tier3 as (
			select d.*, 0::real as rank, null::tsquery as hq, 3 as tier
			from docs d
			where not exists (select 1 from tier1) and not exists (select 1 from tier2) and d.like_hit
		),
		hits as (
			select * from tier1 union all select * from tier2 union all select * from tier3
			order by rank desc, title
			limit ${max}
		),
		-- The snippet comes from the body when the match is there (the title is shown anyway),
		-- with Markdown syntax (headings, quotes, list markers, fences, emphasis, table pipes, link
		-- targets) reduced to plain words.
		prepared as (
			select h.*, trim(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
				case
					when h.text = '' then h.title
					when h.tier < 3 and numnode(h.hq) > 0 and to_tsvector('english', h.text) @@ h.hq then h.text
					when h.tier = 3 and h.text ilike ${pattern} then h.text
					else h.title || ': ' || h.text
				end,
				'!?[[]([^]]*)[]][(][^)]*[)]', '\\1', 'g'),
				'(^|\\n)[ \\t]*(#{1,6}|>+|[-+*]|[0-9]+[.)])[ \\t]+', '\\1', 'g'),
				'\`\`\`[^[:space:]]*|:?-{3,}:?', ' ', 'g'),
				'[*|~\`]+|_{2,}', ' ', 'g'),
				'[[:space:]]+', ' ', 'g')) as plain
			from hits h
		)
		select kind, id, title, source, external_id as "externalId", rank::float8 as rank, tier,
			case
				when tier < 3 and numnode(hq) > 0 then ts_headline('english', plain, hq,
					'StartSel=«, StopSel=», MaxFragments=2, MaxWords=28, MinWords=8, FragmentDelimiter=" … "')
				else substr(plain, greatest(1, strpos(lower(plain), lower(${q})) - 80), 220)
			end as snippet
		from prepared
		order by rank desc, title`;
	return rows.map(({ tier, ...r }) => ({
		...r,
		rank: Number(r.rank),
		snippet: tier === 3 ? markLiteral(r.snippet, q) : r.snippet
	}));
}

/** Wraps each case-insensitive occurrence of q in «» (the substring tier has no ts_headline). */
function markLiteral(text: string, q: string): string {
	const re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi');
	return text.replace(re, (m) => `«${m}»`);
}

/** Serialises imports of the knowledge directory (web and worker both import at boot). */
const IMPORT_LOCK = 7_140_202_615;
/** source_path of the notes Nomos ships about itself (agent/guide/*.md); the operator's imports never touch them. */
export const GUIDE_PREFIX = 'nomos:guide/';

/**
 * Makes the file notes match the files read: inserts new ones, updates changed ones, and deletes
 * file notes whose path is not in `keepPaths`. One transaction; concurrent imports wait in turn.
 */
export async function replaceFileNotes(
	sql: Sql,
	files: Array<{ path: string; title: string; body: string }>,
	keepPaths: string[]
): Promise<{ created: number; updated: number; removed: number }> {
	return sql.begin(async (tx) => {
		await tx`select pg_advisory_xact_lock(${IMPORT_LOCK})`;
		const { created, updated } = await upsertFileNotes(tx, files);
		const gone = await tx`
			delete from knowledge
			where source = 'file' and not (source_path = any(${keepPaths}::text[])) and source_path not like ${GUIDE_PREFIX + '%'}
			returning id`;
		return { created, updated, removed: gone.length };
	});
}

/** Inserts or updates file notes by path (a note already equal is left alone); counts what changed. */
async function upsertFileNotes(tx: TransactionSql, files: Array<{ path: string; title: string; body: string }>): Promise<{ created: number; updated: number }> {
	let created = 0;
	let updated = 0;
	for (const f of files) {
		const rows = await tx<{ inserted: boolean }[]>`
			insert into knowledge (title, body, source, source_path)
			values (${f.title}, ${f.body}, 'file', ${f.path})
			on conflict (source_path) do update
				set title = excluded.title, body = excluded.body, source = 'file', updated_at = now()
				where knowledge.title is distinct from excluded.title
					or knowledge.body is distinct from excluded.body
					or knowledge.source is distinct from 'file'
			returning (xmax = 0) as inserted`;
		if (rows.length) {
			if (rows[0].inserted) created++;
			else updated++;
		}
	}
	return { created, updated };
}

/**
 * Makes the guide notes exactly `files` (keyed by `nomos:guide/<file>`): new ones inserted,
 * changed ones updated, ones no longer shipped deleted. Idempotent; safe from several processes.
 */
export async function replaceGuideNotes(
	sql: Sql,
	files: Array<{ path: string; title: string; body: string }>
): Promise<{ created: number; updated: number; removed: number }> {
	return sql.begin(async (tx) => {
		await tx`select pg_advisory_xact_lock(${IMPORT_LOCK})`;
		const { created, updated } = await upsertFileNotes(
			tx,
			files.map((f) => ({ ...f, path: GUIDE_PREFIX + f.path }))
		);
		const keep = files.map((f) => GUIDE_PREFIX + f.path);
		const gone = await tx`delete from knowledge where source_path like ${GUIDE_PREFIX + '%'} and not (source_path = any(${keep}::text[])) returning id`;
		return { created, updated, removed: gone.length };
	});
}
