import { sql as appSql, type Sql } from '../db/index';
import { overviewFacts, type UsageByModel } from '../db/queries/review';
import { env } from '../env';
import { costOf } from '../../messages/usage';
import type { StepUsage } from '../../types/messages';
import { OTHER_TOOL, TOOL_NAMES, type Severity } from '../db/review-rules';
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

/** Usage per model as costOf reads it. */
export const perModel = (u: UsageByModel): StepUsage[] =>
	Object.entries(u).map(([model, [input, output, cached]]) => ({ model, input: Number(input), output: Number(output), cached: Number(cached) }));

/**
 * Every session in the filter reviewed at once, in one statement: the sessions ranked by
 * their findings weighted by severity, how often each finding kind occurs, and calls and
 * failures per tool. The same rules as reviewSession (db/queries/review.ts). Reads the stored message
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

	const { source, facts: r } = await overviewFacts(sql, { from, to, outcome, limit, source: opts.source });

	const rank = { high: 0, medium: 1, low: 2 } as const;
	const prices = env().NOMOS_PRICES;
	return {
		filter: { from, to, outcome },
		sessionCount: r.session_count,
		reachedCount: r.reached_count,
		toolCallCount: r.tool_call_count,
		sessions: r.sessions.map((s): OverviewSession => ({
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
		})),
		tokens: { input: r.input_tokens, output: r.output_tokens, cached: r.cached_tokens },
		costUsd: costOf(perModel(r.by_model), prices),
		kinds: r.kinds,
		tokenSessions: r.by_tokens.map((s) => ({ id: s.id, title: s.title, tokens: { input: s.input, output: s.output, cached: s.cached } })),
		source,
		tools: histogram(r.tool_counts, r.tool_call_count, r.fail_counts),
		origins: { ...r.origin_counts, alerts: r.alert_times }
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
