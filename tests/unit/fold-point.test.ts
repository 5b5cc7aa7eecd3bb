import { describe, expect, it } from 'vitest';
import { foldPoint, summaryPrompt } from '../../src/lib/server/agent/summary';

const rows = (roles: string): Array<{ role: 'user' | 'assistant' | 'system' }> =>
	[...roles].map((c) => ({ role: c === 'u' ? 'user' : c === 's' ? 'system' : 'assistant' }));

describe('foldPoint', () => {
	it('folds the fewest whole turns that bring the rest to half the budget', () => {
		// turns: [u a] [u a] [u a] [u a], each message 100 tokens; budget 500 → the rest ≤ 250.
		expect(foldPoint(rows('uauauaua'), Array(8).fill(100), 500)).toBe(6);
		expect(foldPoint(rows('uauauaua'), Array(8).fill(100), 1000)).toBe(4);
	});

	it('cuts only where a turn starts, and never past the latest operator message', () => {
		expect(foldPoint(rows('uaaaua'), [10, 10, 10, 10, 1000, 1000], 100)).toBe(4);
		// One operator message: nothing before it to fold.
		expect(foldPoint(rows('uaaaa'), [10, 1000, 1000, 1000, 1000], 100)).toBe(0);
		expect(foldPoint(rows('aaa'), [1000, 1000, 1000], 100)).toBe(0);
	});
});

describe('summaryPrompt', () => {
	it('gives the summary so far and the folded part as plain lines, notes told apart from the operator', () => {
		const p = summaryPrompt('Earlier: caddy runs.', [
			{ role: 'user', content: 'is db up?' },
			{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'get_lxc_state', input: { name: 'db' } }] },
			{ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'get_lxc_state', output: { type: 'json', value: { status: 'running' } } }] },
			{ role: 'assistant', content: [{ type: 'text', text: 'db runs.' }] },
			{ role: 'user', content: '[system note — not from the operator] the plan ended' }
		]);
		expect(p).toContain('Summary so far:\nEarlier: caddy runs.');
		expect(p).toContain('Operator: is db up?');
		expect(p).toContain('Agent called get_lxc_state({"name":"db"})');
		expect(p).toContain('Result of get_lxc_state: {"status":"running"}');
		expect(p).toContain('Agent: db runs.');
		expect(p).toContain('Note: [system note');
	});
});
