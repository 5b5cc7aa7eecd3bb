import { describe, expect, it } from 'vitest';
import { renderOverviewMarkdown } from '../../src/lib/server/review/markdown';
import type { ReviewOverview } from '../../src/lib/server/review/types';

const overview = (over: Partial<ReviewOverview> = {}): ReviewOverview => ({
	filter: { from: '2026-11-01', to: null, outcome: 'not_reached' },
	sessionCount: 3,
	reachedCount: 1,
	toolCallCount: 42,
	sessions: [
		{
			id: '0b8c',
			title: 'Deploy [x] | y',
			createdAt: '2026-11-30T16:13:38.123456Z',
			messages: 9,
			toolCalls: 40,
			score: 17,
			kinds: ['n_plus_one'],
			worst: 'medium',
			reached: false,
			tokens: { input: 12_000, output: 800, cached: 9000 },
			costUsd: 0.05
		}
	],
	tokens: { input: 12_000, output: 800, cached: 9000 },
	costUsd: 0.0042,
	tokenSessions: [{ id: '0b8c', title: 'Deploy [x] | y', tokens: { input: 12_000, output: 800, cached: 9000 } }],
	kinds: [{ kind: 'n_plus_one', sessions: 2 }],
	tools: [{ tool: 'get_entity', calls: 40, failed: 4, failureRate: 0.1 }],
	source: 'facts',
	origins: { operator: 2, alert: 1, schedule: 0, alerts: { withFindings: 1, findingsMedianS: 42, withFix: 0, fixMedianS: null } },
	...over
});

describe('renderOverviewMarkdown', () => {
	it('says the filter and totals, and tables kinds, tools and ranked sessions', () => {
		const md = renderOverviewMarkdown(overview(), 'https://nomos.lan');
		expect(md).toContain('- Filter: from 2026-11-01, outcome not reached');
		expect(md).toContain('- Sessions: 3 (goal reached in 1, 33%)');
		expect(md).toContain('- Tokens: 12k in · 800 out · 9k cached ($0.0042)');
		expect(md).toContain('| n_plus_one | 2 |');
		expect(md).toContain('| get_entity | 40 | 4 | 10.0% |');
		// Brackets and pipes in a title cannot break the link or the table.
		expect(md).toContain('| 17 | [Deploy \\[x\\] \\| y](https://nomos.lan/admin/review/0b8c) | 2026-11-30 16:13 | 9 | 40 | n_plus_one | not reached |');
	});

	it('reads plainly when there is nothing', () => {
		const md = renderOverviewMarkdown(
			overview({
				filter: { from: null, to: null, outcome: null },
				sessionCount: 0,
				reachedCount: 0,
				toolCallCount: 0,
				sessions: [],
				kinds: [],
				tools: [],
				costUsd: null
			}),
			'http://x'
		);
		expect(md).toContain('- Filter: none (every session)');
		expect(md).toContain('- Sessions: 0 (goal reached in 0, —)');
		expect(md).toContain('No findings.');
		expect(md).toContain('No tool calls.');
	});
});
