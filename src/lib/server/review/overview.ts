import { sql as appSql, type Sql } from '../db/index';
import { reviewCtes } from './facts';
import type { FindingKind, Severity } from './rules';
import type { OverviewFilter, OverviewSession, ReviewOverview } from './types';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A YYYY-MM-DD that is a real date, or null. */
export function parseDay(s: string | null | undefined): string | null {
	if (!s || !DATE.test(s)) return null;
	const d = new Date(`${s}T00:00:00Z`);
	return Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== s ? null : s;
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
	tools: { tool: string; calls: number; failed: number }[];
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

	const sessions = sql`
		select id, title, created_at from chat_sessions
		where (${from}::date is null or created_at >= (${from}::date)::timestamp at time zone 'UTC')
			and (${to}::date is null or created_at < ((${to}::date) + 1)::timestamp at time zone 'UTC')`;

	const [r] = await sql<Result[]>`
		with ${reviewCtes(sql, sessions)},
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
			(select coalesce(json_agg(json_build_object('tool', tool, 'calls', calls, 'failed', failed) order by calls desc, tool), '[]') from (
				select p.tool, sum(p.n)::int as calls, sum(p.errs)::int as failed
				from r_pe p where p.type = 'tool-call' and p.sid in (select sid from r_in)
				group by p.tool
			) z) as tools`;

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
		tools: r.tools.map((t) => ({ ...t, tool: t.tool ?? '(unnamed)', failureRate: t.calls ? t.failed / t.calls : 0 }))
	};
}
