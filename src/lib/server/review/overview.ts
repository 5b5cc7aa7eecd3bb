import { sql as appSql, type Sql } from '../db/index';
import { FACTS_VERSION, storedFactsVersion } from '../db/queries/review-facts';
import { commaList, kindsOf, RANKED_KINDS, reviewCtes } from './facts';
import { env } from '../env';
import { costOf } from '../../messages/usage';
import type { StepUsage } from '../../types/messages';
import { OTHER_TOOL, TOOL_NAMES, type FindingKind, type Severity } from '../../review/rules';
import type { OverviewFilter, OverviewSession, ReviewOverview } from './types';
import { reviewOrigins } from './origins';

/** Sessions in the overview's tokens chart (the most tokens first). */
const TOKEN_SESSIONS = 20;

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A YYYY-MM-DD that is a real date, or null. */
export function parseDay(s: string | null | undefined): string | null {
	if (!s || !DATE.test(s)) return null;
	const d = new Date(`${s}T00:00:00Z`);
	return Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== s ? null : s;
}

/** The overview's filter from GET parameters (?from=YYYY-MM-DD&to=…&outcome=…); bad values are ignored. */
export function filterFromSearch(q: URLSearchParams): OverviewFilter {
	const outcome = q.get('outcome');
	return {
		from: q.get('from') ?? undefined,
		to: q.get('to') ?? undefined,
		outcome: outcome === 'reached' || outcome === 'not_reached' ? outcome : undefined
	};
}

/** `{ model: [input, output, cached] }` (session_facts.usage_by_model). */
type UsageByModel = Record<string, [number, number, number]>;

/** Usage per model as costOf reads it. */
const perModel = (u: UsageByModel): StepUsage[] =>
	Object.entries(u).map(([model, [input, output, cached]]) => ({ model, input: Number(input), output: Number(output), cached: Number(cached) }));

interface Result {
	session_count: number;
	reached_count: number;
	tool_call_count: number;
	input_tokens: number;
	output_tokens: number;
	cached_tokens: number;
	sessions: {
		id: string;
		title: string;
		created_at: string;
		messages: number;
		tool_calls: number;
		score: number;
		kinds: FindingKind[];
		sevs: (Severity | null)[];
		reached: boolean;
		input_tokens: number;
		output_tokens: number;
		cached_tokens: number;
		usage_by_model: UsageByModel;
	}[];
	/** Tokens per model over every session in the filter. */
	by_model: UsageByModel;
	kinds: { kind: FindingKind; sessions: number }[];
	by_tokens: { id: string; title: string; input: number; output: number; cached: number }[];
	/** Calls per TOOL_NAMES entry, in that order. */
	tool_counts: number[];
	/** Failed calls per TOOL_NAMES entry, then of other names. */
	fail_counts: number[];
}

/**
 * Every session in the filter reviewed at once, in one statement: the sessions ranked by
 * their findings weighted by severity, how often each finding kind occurs, and calls and
 * failures per tool. The same rules as reviewSession (facts.ts). Reads the stored message
 * facts while they are of this code's version, else every message's parts (slower, same
 * answer) until the rebuild job has run; `source` forces one or the other.
 */
export async function reviewOverview(
	filter: OverviewFilter = {},
	sql: Sql = appSql(),
	opts: { source?: ReviewOverview['source'] } = {}
): Promise<ReviewOverview> {
	const from = parseDay(filter.from);
	const to = parseDay(filter.to);
	const outcome = filter.outcome === 'reached' || filter.outcome === 'not_reached' ? filter.outcome : null;
	const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500);

	// One statement. Over every message's parts (while the facts are rebuilt), give it room to
	// sort and hash in memory, and let the parallel workers scan while this backend only merges.
	const [source, [r]] = await sql.begin(async (tx) => {
		const source = opts.source ?? ((await storedFactsVersion(tx)) === FACTS_VERSION ? 'facts' : 'parts');
		if (source === 'parts') await tx`set local work_mem = '64MB'; set local parallel_leader_participation = off`.simple();
		const where =
			from || to
				? tx`(${from}::date is null or c.created_at >= (${from}::date)::timestamp at time zone 'UTC')
					and (${to}::date is null or c.created_at < ((${to}::date) + 1)::timestamp at time zone 'UTC')`
				: null;

		const sums = (col: string, n: number) => commaList(tx, Array.from({ length: n }, (_, i) => tx`coalesce(sum(${tx(col)}[${i + 1}]), 0)::int`));
		const sevs = commaList(tx, RANKED_KINDS.map((k) => tx`${tx(`sev_${k}`)}`));
		const kindCounts = commaList(tx, RANKED_KINDS.map((k) => tx`count(*) filter (where ${tx(`sev_${k}`)} is not null)::int`));
		// Totals, finding kinds, calls and failures per tool in one pass over r_in; then the ranked page.
		const rows = await tx<Result[]>`
		with ${reviewCtes(tx, where, { source })},
		r_in as (
			select sid, title, created_at, messages, tool_calls, score, reached, tool_counts, fail_counts, input_tokens, output_tokens, cached_tokens, usage_by_model, ${sevs}
			from r_scored
			where ${outcome}::text is null or reached = (${outcome}::text = 'reached')
		),
		r_tot as (
			select count(*)::int as session_count, count(*) filter (where reached)::int as reached_count,
				coalesce(sum(tool_calls), 0)::int as tool_call_count, coalesce(sum(input_tokens), 0)::float8 as input_tokens,
				coalesce(sum(output_tokens), 0)::float8 as output_tokens, coalesce(sum(cached_tokens), 0)::float8 as cached_tokens,
				array[${kindCounts}] as kind_counts, json_build_array(${sums('tool_counts', TOOL_NAMES.length)}) as tool_counts,
				json_build_array(${sums('fail_counts', TOOL_NAMES.length + 1)}) as fail_counts
			from r_in
		)
		select t.session_count, t.reached_count, t.tool_call_count, t.tool_counts, t.fail_counts, t.input_tokens, t.output_tokens, t.cached_tokens,
			(select coalesce(json_agg(x), '[]') from (
				select sid as id, title, created_at, messages, tool_calls, score, ${kindsOf(tx)} as kinds, reached, array[${sevs}] as sevs,
					input_tokens::float8 as input_tokens, output_tokens::float8 as output_tokens, cached_tokens::float8 as cached_tokens, usage_by_model
				from r_in order by score desc, tool_calls desc, created_at desc limit ${limit}
			) x) as sessions,
			(select coalesce(json_agg(json_build_object('kind', k, 'sessions', n) order by n desc, k), '[]')
				from unnest(string_to_array(${RANKED_KINDS.join(',')}::text, ','), t.kind_counts) as y(k, n) where n > 0) as kinds,
			(select coalesce(json_agg(x), '[]') from (
				select sid as id, title, input_tokens::float8 as input, output_tokens::float8 as output, cached_tokens::float8 as cached
				from r_in where input_tokens + output_tokens > 0 order by input_tokens + output_tokens desc, created_at desc limit ${TOKEN_SESSIONS}
			) x) as by_tokens,
			(select coalesce(jsonb_object_agg(k, jsonb_build_array(i, o, c)), '{}') from (
				select k, sum((v ->> 0)::float8) as i, sum((v ->> 1)::float8) as o, sum((v ->> 2)::float8) as c
				from r_in, jsonb_each(r_in.usage_by_model) e(k, v) group by k
			) y) as by_model
		from r_tot t`;
		return [source, rows] as const;
	});

	const origins = await reviewOrigins(sql, from, to);
	const rank = { high: 0, medium: 1, low: 2 } as const;
	const prices = env().NOMOS_PRICES;
	return {
		filter: { from, to, outcome },
		sessionCount: r.session_count,
		reachedCount: r.reached_count,
		toolCallCount: r.tool_call_count,
		sessions: r.sessions.map(
			(s): OverviewSession => ({
				id: s.id,
				title: s.title,
				createdAt: s.created_at,
				messages: s.messages,
				toolCalls: s.tool_calls,
				score: s.score,
				kinds: s.kinds,
				worst: (s.sevs.filter(Boolean) as Severity[]).sort((a, b) => rank[a] - rank[b])[0] ?? null,
				reached: s.reached,
				tokens: { input: s.input_tokens, output: s.output_tokens, cached: s.cached_tokens },
				costUsd: costOf(perModel(s.usage_by_model), prices)
			})
		),
		tokens: { input: r.input_tokens, output: r.output_tokens, cached: r.cached_tokens },
		costUsd: costOf(perModel(r.by_model), prices),
		kinds: r.kinds,
		tokenSessions: r.by_tokens.map((s) => ({ id: s.id, title: s.title, tokens: { input: s.input, output: s.output, cached: s.cached } })),
		source,
		tools: histogram(r.tool_counts, r.tool_call_count, r.fail_counts),
		origins
	};
}

/** Calls and failures per tool, most called first; names outside TOOL_NAMES are "other". */
function histogram(counts: number[], total: number, failures: number[]): ReviewOverview['tools'] {
	const rows: Array<{ tool: string; calls: number; failed: number }> = TOOL_NAMES.map((tool, i) => ({ tool, calls: counts[i], failed: failures[i] }));
	const otherCalls = total - counts.reduce((a, b) => a + b, 0);
	if (otherCalls > 0) rows.push({ tool: OTHER_TOOL, calls: otherCalls, failed: failures[TOOL_NAMES.length] });
	return rows
		.filter((t) => t.calls > 0)
		.map((t) => ({ ...t, failureRate: t.failed / t.calls }))
		.sort((a, b) => b.calls - a.calls || a.tool.localeCompare(b.tool));
}
