import { sql as appSql, type Sql } from '../db/index';
import { commaList, reviewCtes } from './facts';
import { OTHER_TOOL, TOOL_NAMES, type FindingKind, type Severity } from './rules';
import type { OverviewFilter, OverviewSession, ReviewOverview } from './types';

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

interface Result {
	session_count: number;
	reached_count: number;
	tool_call_count: number;
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
	}[];
	kinds: { kind: FindingKind; sessions: number }[];
	/** Calls per TOOL_NAMES entry, in that order. */
	tool_counts: number[] | null;
	tool_failures: Record<string, number>;
}

/**
 * Every session in the filter reviewed at once, in one statement: the sessions ranked by
 * their findings weighted by severity, how often each finding kind occurs, and calls and
 * failures per tool. The same rules as reviewSession (facts.ts).
 */
export async function reviewOverview(filter: OverviewFilter = {}, sql: Sql = appSql()): Promise<ReviewOverview> {
	const from = parseDay(filter.from);
	const to = parseDay(filter.to);
	const outcome = filter.outcome === 'reached' || filter.outcome === 'not_reached' ? filter.outcome : null;
	const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500);

	// One statement over every message of the range: give it room to sort and hash in memory,
	// and let the parallel workers scan while this backend only merges.
	const [r] = await sql.begin(async (tx) => {
		await tx`set local work_mem = '64MB'`;
		await tx`set local parallel_leader_participation = off`;
		const where =
			from || to
				? tx`(${from}::date is null or c.created_at >= (${from}::date)::timestamp at time zone 'UTC')
					and (${to}::date is null or c.created_at < ((${to}::date) + 1)::timestamp at time zone 'UTC')`
				: null;

		// Without an outcome filter every message in r_m belongs to a session in r_in.
		const inRange = outcome ? tx`where m.sid in (select sid from r_in)` : tx``;
		const sums = commaList(tx, TOOL_NAMES.map((_, i) => tx`coalesce(sum(m.tool_counts[${i + 1}]), 0)::int`));
		return tx<Result[]>`
		with ${reviewCtes(tx, where)},
		r_in as (
			select * from r_scored
			where ${outcome}::text is null or reached = (${outcome}::text = 'reached')
		)
		select
			(select count(*)::int from r_in) as session_count,
			(select count(*) filter (where reached)::int from r_in) as reached_count,
			(select coalesce(sum(tool_calls), 0)::int from r_in) as tool_call_count,
			(select coalesce(json_agg(x), '[]') from (
				select sid as id, title, created_at, messages, tool_calls, score, kinds, reached,
					array[sev_missing_capability, sev_silent_failure, sev_n_plus_one, sev_operator_as_event_loop, sev_stall] as sevs
				from r_in order by score desc, tool_calls desc, created_at desc limit ${limit}
			) x) as sessions,
			(select coalesce(json_agg(json_build_object('kind', k, 'sessions', n) order by n desc, k), '[]') from (
				select k, count(*)::int as n from r_in, unnest(kinds) k group by k
			) y) as kinds,
			(select json_build_array(${sums}) from r_m m ${inRange}) as tool_counts,
			(select coalesce(json_object_agg(tool, n), '{}') from (
				select tool, count(*)::int as n from r_m m, string_to_table(replace(m.failed_tools, '!', ''), ' ') tool
				where m.failed_tools is not null ${outcome ? tx`and m.sid in (select sid from r_in)` : tx``} group by tool
			) f) as tool_failures`;
	});

	const rank = { high: 0, medium: 1, low: 2 } as const;
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
				reached: s.reached
			})
		),
		kinds: r.kinds,
		tools: histogram(r.tool_counts ?? TOOL_NAMES.map(() => 0), r.tool_call_count, r.tool_failures)
	};
}

/** Calls and failures per tool, most called first; names outside TOOL_NAMES are "other". */
function histogram(counts: number[], total: number, failures: Record<string, number>): ReviewOverview['tools'] {
	const known = new Set<string>(TOOL_NAMES);
	const rows: Array<{ tool: string; calls: number; failed: number }> = TOOL_NAMES.map((tool, i) => ({ tool, calls: counts[i], failed: failures[tool] ?? 0 }));
	const otherCalls = total - counts.reduce((a, b) => a + b, 0);
	const otherFailed = Object.entries(failures).reduce((n, [t, f]) => (known.has(t) ? n : n + f), 0);
	if (otherCalls > 0) rows.push({ tool: OTHER_TOOL, calls: otherCalls, failed: otherFailed });
	return rows
		.filter((t) => t.calls > 0)
		.map((t) => ({ ...t, failureRate: t.failed / t.calls }))
		.sort((a, b) => b.calls - a.calls || a.tool.localeCompare(b.tool));
}
