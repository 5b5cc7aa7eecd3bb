import { and, desc, eq, sql as dsql } from 'drizzle-orm';
import { db, sql } from '../index';
import { knowledge } from '../schema';

export type KnowledgeSource = 'page' | 'file' | 'inventory';

/** One note as the app shows it; timestamps are ISO strings so tRPC and load data agree. */
export type KnowledgeNote = {
	id: string;
	title: string;
	body: string;
	source: KnowledgeSource;
	sourcePath: string | null;
	createdAt: string;
	updatedAt: string;
};

/** A list row: the note without its body, plus a short plain preview. */
export type KnowledgeSummary = Omit<KnowledgeNote, 'body'> & { preview: string };

export type KnowledgeInput = { title: string; body: string };

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

const iso = (d: Date) => d.toISOString();

function toNote(row: typeof knowledge.$inferSelect): KnowledgeNote {
	return {
		id: row.id,
		title: row.title,
		body: row.body,
		source: row.source,
		sourcePath: row.sourcePath,
		createdAt: iso(row.createdAt),
		updatedAt: iso(row.updatedAt)
	};
}

/** Every note, most recently updated first, without bodies. */
export async function listKnowledge(): Promise<KnowledgeSummary[]> {
	const rows = await db()
		.select({
			id: knowledge.id,
			title: knowledge.title,
			source: knowledge.source,
			sourcePath: knowledge.sourcePath,
			createdAt: knowledge.createdAt,
			updatedAt: knowledge.updatedAt,
			preview: dsql<string>`left(regexp_replace(${knowledge.body}, '[[:space:]]+', ' ', 'g'), 240)`
		})
		.from(knowledge)
		.orderBy(desc(knowledge.updatedAt), knowledge.title);
	return rows.map((r) => ({ ...r, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) }));
}

export async function getKnowledge(id: string): Promise<KnowledgeNote | null> {
	const [row] = await db().select().from(knowledge).where(eq(knowledge.id, id));
	return row ? toNote(row) : null;
}

/** Creates an operator-written note (source 'page'). */
export async function createKnowledge(input: KnowledgeInput): Promise<KnowledgeNote> {
	const [row] = await db()
		.insert(knowledge)
		.values({ title: input.title, body: input.body, source: 'page' })
		.returning();
	return toNote(row);
}

/**
 * Updates a 'page' note. Returns null when there is no such note, 'read-only' when it exists
 * but came from a file or the inventory (those are rewritten by their importer).
 */
export async function updateKnowledge(id: string, input: KnowledgeInput): Promise<KnowledgeNote | 'read-only' | null> {
	const [row] = await db()
		.update(knowledge)
		.set({ title: input.title, body: input.body, updatedAt: new Date() })
		.where(and(eq(knowledge.id, id), eq(knowledge.source, 'page')))
		.returning();
	if (row) return toNote(row);
	return (await getKnowledge(id)) ? 'read-only' : null;
}

/** Deletes a 'page' note; same results as updateKnowledge (true when deleted). */
export async function deleteKnowledge(id: string): Promise<true | 'read-only' | null> {
	const rows = await db()
		.delete(knowledge)
		.where(and(eq(knowledge.id, id), eq(knowledge.source, 'page')))
		.returning({ id: knowledge.id });
	if (rows.length) return true;
	return (await getKnowledge(id)) ? 'read-only' : null;
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
export async function searchKnowledge(query: string, limit = 8): Promise<SearchResult[]> {
	const q = query.trim();
	if (!q) return [];
	const pattern = likePattern(q);
	const max = Math.max(1, Math.min(50, Math.floor(limit)));
	const rows = await sql()<
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
