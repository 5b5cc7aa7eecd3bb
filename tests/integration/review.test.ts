import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { reviewOverview, reviewSession, reviewSessionMarkdown } from '../../src/lib/server/review';
import { useTestDatabase } from '../helpers/db';
import { insertFailedSessionFixture, insertHealthySessionFixture, insertNudgedSessionFixture, insertSilentSessionFixture } from '../helpers/review-fixture';

useTestDatabase();

const day = (d: Date) => d.toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000);

describe('session review', () => {
	let failed: string;
	let healthy: string;
	let nudged: string;
	let silent: string;
	let old: string;

	beforeAll(async () => {
		failed = await insertFailedSessionFixture(sql());
		healthy = await insertHealthySessionFixture(sql());
		nudged = await insertNudgedSessionFixture(sql());
		silent = await insertSilentSessionFixture(sql());
		// Same failure, 40 days ago: only a date filter that reaches back finds it.
		old = await insertFailedSessionFixture(sql(), { at: daysAgo(40), title: 'old TypeType attempt' });
	});

	it('finds the missing pct_create first, the get_entity N+1 and the operator nudges', async () => {
		const r = (await reviewSession(failed))!;
		expect(r).not.toBeNull();
		expect(r.totals.messages).toBe(10);
		expect(r.totals.byRole).toEqual({ user: 5, assistant: 5, system: 0 });
		expect(r.totals.toolCalls).toBe(150);
		expect(r.totals.durationSeconds).toBe(9 * 4 * 60);
		expect(r.totals.executions).toEqual({ requested: 3, approved: 1, succeeded: 0, failed: 1, notRun: 0, denied: 1, expired: 1 });
		expect(r.messages.map((m) => m.toolCalls)).toEqual([0, 40, 0, 2, 0, 60, 0, 44, 0, 4]);
		expect(r.messages[1].topTools.slice(0, 2)).toEqual([
			{ tool: 'get_entity', n: 20 },
			{ tool: 'search_knowledge', n: 12 }
		]);
		expect(r.messages[0].summary).toBe('deploy TypeType on strong as LXC');

		const [first] = r.findings;
		expect(first.kind).toBe('missing_capability');
		expect(first.severity).toBe('high');
		expect(first.title).toContain('pct_create');
		expect(first.evidence.messageIndexes).toEqual([5, 7, 9]);
		expect(first.evidence.detail.join('\n')).toContain("unknown action 'pct_create'");
		expect(first.evidence.detail.join('\n')).toContain("I can't run pct create");

		const n1 = r.findings.find((f) => f.kind === 'n_plus_one')!;
		expect(n1.severity).toBe('high');
		expect(n1.title).toContain('get_entity ×20');
		expect(n1.title).toContain('message 1');
		expect(n1.evidence.messageIndexes).toEqual([1]);

		const loop = r.findings.find((f) => f.kind === 'operator_as_event_loop')!;
		expect(loop.severity).toBe('medium');
		expect(loop.evidence.messageIndexes).toEqual([4, 6, 8]);

		const goal = r.findings.find((f) => f.kind === 'goal_outcome')!;
		expect(goal.title).toMatch(/not reached/);
		expect(r.outcome.reached).toBe(false);
		expect(r.outcome.reason).toContain('pct_create');

		// The failed clone was reported in message 7: not silent. Nothing stalled.
		expect(r.findings.map((f) => f.kind)).not.toContain('silent_failure');
		expect(r.findings.map((f) => f.kind)).not.toContain('stall');
		const ranks = r.findings.map((f) => ['high', 'medium', 'low'].indexOf(f.severity));
		expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
	});

	it('finds silent failures and stalls, and a reached goal', async () => {
		const s = (await reviewSession(silent))!;
		const kinds = s.findings.map((f) => f.kind);
		expect(kinds).toContain('silent_failure');
		expect(kinds).toContain('stall');
		expect(s.findings.find((f) => f.kind === 'silent_failure')!.evidence.detail.join(' ')).toContain('pct_start');
		expect(s.findings.find((f) => f.kind === 'stall')!.evidence.detail.join(' ')).toContain('Which storage');

		const h = (await reviewSession(healthy))!;
		expect(h.outcome.reached).toBe(true);
		expect(h.findings.map((f) => f.kind)).toEqual(['goal_outcome']);
		expect(h.findings[0].title).toBe('Goal reached');

		const n = (await reviewSession(nudged))!;
		expect(n.findings.find((f) => f.kind === 'n_plus_one')).toMatchObject({ severity: 'medium' });
		expect(n.findings.find((f) => f.kind === 'n_plus_one')!.title).toContain('get_lxc_state ×6');
		expect(n.findings.find((f) => f.kind === 'operator_as_event_loop')).toMatchObject({ severity: 'low' });
		expect(n.outcome.reached).toBe(true);
	});

	it('returns null for an unknown session', async () => {
		expect(await reviewSession('00000000-0000-0000-0000-000000000000')).toBeNull();
	});

	it('exports Markdown with totals, the message table and the findings', async () => {
		const md = (await reviewSessionMarkdown(failed))!;
		expect(md).toMatch(/^# Session review: deploy TypeType on strong as LXC/);
		expect(md).toContain('| # | Role | Origin | Tool calls | Top tools | Summary |');
		expect(md).toContain('| 1 | assistant | chat | 40 | get_entity ×20, search_knowledge ×12');
		expect(md).toContain('150 tool calls');
		expect(md).toMatch(/## Findings[\s\S]*\[high\] missing_capability/);
		expect(md).toContain('get_entity ×20');
		expect(md).toContain('**Fix:**');
		// A pipe in a message must not break the table.
		expect(
			md
				.split('\n')
				.filter((l) => l.startsWith('| '))
				.every((l) => l.split(/(?<!\\)\|/).length === 8)
		).toBe(true);
		expect(await reviewSessionMarkdown('00000000-0000-0000-0000-000000000000')).toBeNull();
	});

	it('ranks the failed session first among healthier ones, with kinds and a tool histogram', async () => {
		const o = await reviewOverview({ from: day(daysAgo(1)), to: day(new Date()) });
		expect(o.sessions.map((s) => s.id)).toEqual([failed, silent, nudged, healthy]);
		expect(o.sessionCount).toBe(4);
		expect(o.reachedCount).toBe(2);
		const top = o.sessions[0];
		expect(top).toMatchObject({ messages: 10, toolCalls: 150, reached: false, worst: 'high' });
		expect(top.kinds).toEqual(['missing_capability', 'n_plus_one', 'operator_as_event_loop']);
		expect(o.sessions[3].kinds).toEqual([]);
		expect(o.kinds.find((k) => k.kind === 'n_plus_one')!.sessions).toBe(2);
		expect(o.kinds[0]).toEqual({ kind: 'n_plus_one', sessions: 2 });
		const rq = o.tools.find((t) => t.tool === 'request_execution')!;
		// 13 unknown-action / bad-params results in the failed session are failures.
		expect(rq.failed).toBe(15);
		expect(o.tools[0].tool).toBe('search_knowledge');
		const http = o.tools.find((t) => t.tool === 'http_get')!;
		expect(http.failed).toBe(1);
		expect(http.failureRate).toBeCloseTo(1 / 17);
		expect(o.toolCallCount).toBe(o.tools.reduce((n, t) => n + t.calls, 0));
	});

	it('filters by date range and outcome', async () => {
		const all = await reviewOverview({});
		expect(all.sessionCount).toBe(5);
		expect(
			all.sessions
				.slice(0, 2)
				.map((s) => s.id)
				.sort()
		).toEqual([failed, old].sort());

		const recent = await reviewOverview({ from: day(daysAgo(7)) });
		expect(recent.sessions.map((s) => s.id)).not.toContain(old);
		const past = await reviewOverview({ to: day(daysAgo(30)) });
		expect(past.sessions.map((s) => s.id)).toEqual([old]);

		const reached = await reviewOverview({ outcome: 'reached' });
		expect(reached.sessions.map((s) => s.id).sort()).toEqual([healthy, nudged].sort());
		expect(reached.tools.find((t) => t.tool === 'search_knowledge')).toBeUndefined();
		const missed = await reviewOverview({ outcome: 'not_reached' });
		expect(missed.sessions.map((s) => s.id).sort()).toEqual([failed, old, silent].sort());
		// Bad dates are ignored rather than failing the page.
		const bad = await reviewOverview({ from: '2024-02-31', to: 'yesterday' });
		expect(bad.filter).toMatchObject({ from: null, to: null });
		expect(bad.sessionCount).toBe(5);
	});
});
