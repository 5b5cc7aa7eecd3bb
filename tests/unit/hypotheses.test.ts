// Hypotheses (#33): the tools' inputs are bounded and strict, and the session's state is folded
// from its parts — refused calls change nothing, a verdict needs a presented hypothesis, a
// "Pursue this" needs one of the set, and a check counts only when it ran the check.
import { describe, expect, it } from 'vitest';
import { markHypothesisInput, presentHypothesesInput } from '../../src/lib/schemas/hypotheses';
import { finishedCalls, hypothesisSets, latestSetWith, MARK_TOOL, PRESENT_TOOL, pursueText, ranCheck } from '../../src/lib/messages/hypotheses';
import { HYPOTHESIS_PART_TYPES } from '../../src/lib/server/db/review-rules';
import { sendMessageInput } from '../../src/lib/schemas/chat';
import type { MessagePart } from '../../src/lib/types/messages';

const sendPursue = { setId: 'call_1', hypothesisId: 'h2' };

const h = (id: string, extra: Record<string, unknown> = {}) => ({
	id,
	statement: `hypothesis ${id}`,
	evidence: ['c1'],
	check: { action: 'pct_status', target: 'lxc:strong/100' },
	confidence: 'medium',
	...extra
});

describe('the hypothesis schemas', () => {
	it('take 2–3 hypotheses with distinct ids, each bounded', () => {
		expect(presentHypothesesInput.safeParse({ hypotheses: [h('a'), h('b')] }).success).toBe(true);
		expect(presentHypothesesInput.safeParse({ hypotheses: [h('a'), h('b'), h('c')] }).success).toBe(true);
		expect(presentHypothesesInput.safeParse({ hypotheses: [h('a')] }).success).toBe(false);
		expect(presentHypothesesInput.safeParse({ hypotheses: [h('a'), h('b'), h('c'), h('d')] }).success).toBe(false);
		expect(presentHypothesesInput.safeParse({ hypotheses: [h('a'), h('a')] }).success).toBe(false);
		const bad = [
			{ statement: 'x'.repeat(301) },
			{ evidence: [] },
			{ evidence: Array.from({ length: 9 }, (_, i) => `c${i}`) },
			{ evidence: ['x'.repeat(101)] },
			{ confidence: 'certain' },
			{ id: 'h 1' },
			{ id: 'x'.repeat(17) },
			{ check: { action: 'pct_status', target: 'x'.repeat(201) } },
			{ check: { action: 'pct_status', shell: 'rm -rf /' } },
			{ extra: 1 }
		];
		for (const b of bad) expect(presentHypothesesInput.safeParse({ hypotheses: [h('a', b), h('b')] }).success, JSON.stringify(b).slice(0, 60)).toBe(false);
	});

	it('take a verdict of confirmed or refuted with a bounded result and 1–5 evidence ids', () => {
		const ok = { id: 'a', verdict: 'confirmed', result: 'it is', evidence: ['c2'] };
		expect(markHypothesisInput.safeParse(ok).success).toBe(true);
		for (const b of [
			{ verdict: 'maybe' },
			{ result: '' },
			{ result: 'x'.repeat(501) },
			{ evidence: [] },
			{ evidence: ['1', '2', '3', '4', '5', '6'] },
			{ more: true }
		]) {
			expect(markHypothesisInput.safeParse({ ...ok, ...b }).success, JSON.stringify(b)).toBe(false);
		}
	});

	it('a chat message may carry one pursued hypothesis, bounded', () => {
		const base = { sessionId: crypto.randomUUID(), text: 'Pursue hypothesis a: x' };
		expect(sendMessageInput.parse({ ...base, pursue: sendPursue }).pursue).toEqual(sendPursue);
		expect(sendMessageInput.safeParse({ ...base, pursue: { ...sendPursue, hypothesisId: 'a b' } }).success).toBe(false);
		expect(sendMessageInput.safeParse({ ...base, pursue: { ...sendPursue, setId: 'x'.repeat(101) } }).success).toBe(false);
	});
});

const tool = (name: string, toolCallId: string, input: unknown, output: unknown): MessagePart =>
	({ type: `tool-${name}`, toolCallId, state: 'output-available', input, output }) as MessagePart;

describe('hypothesisSets', () => {
	const look = tool('list_lxcs', 'c1', {}, { containers: [] });
	const presented = tool(
		'present_hypotheses',
		's1',
		{ hypotheses: [h('a'), h('b', { check: { action: 'get_lxc_state', params: { name: 'caddy' } } })] },
		{ setId: 's1', shown: ['a', 'b'] }
	);
	const check = tool(
		'request_execution',
		'c2',
		{ action: 'pct_status' },
		{ executionId: 'e1', action: 'pct_status', classification: 'read_only', status: 'succeeded' }
	);

	it('folds presentations, verdicts and the pick in order; refused calls change nothing', () => {
		const messages = [
			{ id: 'm1', parts: [look, presented, check] },
			{
				id: 'm2',
				parts: [
					tool('mark_hypothesis', 'k0', {}, { error: 'none of the evidence ran the check' }),
					tool('mark_hypothesis', 'k1', {}, { setId: 's1', id: 'a', verdict: 'refuted', result: 'running', evidence: ['c2'] }),
					tool('mark_hypothesis', 'k2', {}, { setId: 's1', id: 'zz', verdict: 'confirmed', result: 'x', evidence: ['c2'] }),
					tool('present_hypotheses', 's0', {}, { error: 'not read-only' })
				]
			},
			{
				id: 'm3',
				parts: [
					{ type: 'text', text: pursueText(h('b')) },
					{ type: 'data-pursue', data: { setId: 's1', hypothesisId: 'b' } }
				] as MessagePart[]
			}
		];
		const sets = hypothesisSets(messages);
		expect(sets).toHaveLength(1);
		expect(sets[0]).toMatchObject({ setId: 's1', messageId: 'm1', pursued: 'b' });
		expect(sets[0].hypotheses.map((x) => [x.id, x.verdict, x.result])).toEqual([
			['a', 'refuted', 'running'],
			['b', 'open', undefined]
		]);
		expect(latestSetWith(sets, 'b')?.setId).toBe('s1');
		expect(latestSetWith(sets, 'q')).toBeUndefined();
		// The hypothesis tools' own calls are not evidence.
		expect([...finishedCalls(messages).keys()]).toEqual(['c1', 'c2']);
	});

	it('a pick of a hypothesis not in the set is ignored', () => {
		const sets = hypothesisSets([{ id: 'm1', parts: [look, presented, { type: 'data-pursue', data: { setId: 's1', hypothesisId: 'q' } }] }]);
		expect(sets[0].pursued).toBeNull();
	});

	it('a check ran when a read-only execution of its action, or a successful call of its tool, did', () => {
		const calls = finishedCalls([
			{
				id: 'm',
				parts: [look, check, tool('get_lxc_state', 'c3', { name: 'caddy' }, { status: 'running' }), tool('get_lxc_state', 'c4', {}, { error: 'no such CT' })]
			}
		]);
		const a = h('a');
		const b = h('b', { check: { action: 'get_lxc_state' } });
		expect(ranCheck(a, calls.get('c2')!)).toBe(true);
		expect(ranCheck(a, calls.get('c1')!)).toBe(false);
		expect(ranCheck(h('x', { check: { action: 'pct_config' } }), calls.get('c2')!)).toBe(false);
		expect(ranCheck(b, calls.get('c3')!)).toBe(true);
		expect(ranCheck(b, calls.get('c4')!)).toBe(false);
	});
});

describe('the review finds the messages holding hypotheses', () => {
	it('by the part types hypothesisSets reads (the facts mark them, TBIT.hypotheses)', () => {
		expect([...HYPOTHESIS_PART_TYPES].sort()).toEqual([`tool-${PRESENT_TOOL}`, `tool-${MARK_TOOL}`, 'data-pursue'].sort());
	});
});
