import { describe, expect, it } from 'vitest';
import { parsePrices } from '../../src/lib/schemas/prices';
import { ConfigError, parseEnv } from '../../src/lib/server/env';
import { addStep, costOf, formatCost, formatTokens, sumUsage, usageLine } from '../../src/lib/messages/usage';

describe('NOMOS_PRICES', () => {
	it('parses a price table (cached optional)', () => {
		const r = parsePrices('{"gpt-4.1": {"input": 2, "output": 8, "cached": 0.5}, "qwen2.5:14b": {"input": 0, "output": 0}}');
		expect(r).toEqual({ ok: true, prices: { 'gpt-4.1': { input: 2, output: 8, cached: 0.5 }, 'qwen2.5:14b': { input: 0, output: 0 } } });
		expect(parseEnv({ NOMOS_PRICES: '{"m": {"input": 1, "output": 2}}' }).NOMOS_PRICES).toEqual({ m: { input: 1, output: 2 } });
		expect(parseEnv({}).NOMOS_PRICES).toBeUndefined();
		expect(parseEnv({ NOMOS_PRICES: '' }).NOMOS_PRICES).toBeUndefined();
	});

	it.each([
		['not json', /^is not valid JSON/],
		['[1, 2]', /^must be an object of model prices/],
		['{"gpt-4.1": {"input": 2}}', /^gpt-4\.1\.output: must be a number \(USD per million tokens\)/],
		['{"gpt-4.1": {"input": "2", "output": 8}}', /^gpt-4\.1\.input: must be a number/],
		['{"gpt-4.1": {"input": -1, "output": 8}}', /^gpt-4\.1\.input: must not be negative/],
		['{"gpt-4.1": {"input": 1, "output": 8, "cache": 1}}', /^gpt-4\.1: .*cache/],
		['{"gpt-4.1": 3}', /^gpt-4\.1: /]
	])('rejects %s with what is wrong', (raw, message) => {
		const r = parsePrices(raw);
		expect(r.ok).toBe(false);
		expect(r.ok ? '' : r.message).toMatch(message);
	});

	it('stops the start with one line naming NOMOS_PRICES and the field', () => {
		expect(() => parseEnv({ NOMOS_PRICES: '{"gpt-4.1": {"input": 2}}' })).toThrow(ConfigError);
		expect(() => parseEnv({ NOMOS_PRICES: '{"gpt-4.1": {"input": 2}}' })).toThrow(
			'Invalid configuration: NOMOS_PRICES gpt-4.1.output: must be a number (USD per million tokens)'
		);
	});

	it('NOMOS_TURN_TOKEN_BUDGET: off by default, a positive whole number', () => {
		expect(parseEnv({}).NOMOS_TURN_TOKEN_BUDGET).toBeUndefined();
		expect(parseEnv({ NOMOS_TURN_TOKEN_BUDGET: '50000' }).NOMOS_TURN_TOKEN_BUDGET).toBe(50_000);
		expect(() => parseEnv({ NOMOS_TURN_TOKEN_BUDGET: '0' })).toThrow(/NOMOS_TURN_TOKEN_BUDGET/);
		expect(() => parseEnv({ NOMOS_TURN_TOKEN_BUDGET: 'lots' })).toThrow(/NOMOS_TURN_TOKEN_BUDGET/);
	});
});

describe('cost and token display', () => {
	const step = (model: string, input: number, output: number, cached: number) => ({ model, input, output, cached });

	it('bills cached input at the cached price (else the input price), the rest at input and output', () => {
		const prices = { a: { input: 2, output: 8, cached: 0.5 }, b: { input: 1, output: 4 } };
		expect(costOf([step('a', 1_000_000, 100_000, 400_000)], prices)).toBeCloseTo(0.6 * 2 + 0.4 * 0.5 + 0.1 * 8, 9);
		expect(costOf([step('b', 1_000_000, 0, 500_000)], prices)).toBeCloseTo(1, 9);
		expect(costOf([step('a', 1000, 0, 0), step('b', 1000, 0, 0)], prices)).toBeCloseTo(0.003, 9);
		// Unknown model, no table, nothing used: no cost rather than a wrong one.
		expect(costOf([step('a', 1, 1, 0), step('c', 1, 1, 0)], prices)).toBeNull();
		expect(costOf([step('a', 1, 1, 0)], undefined)).toBeNull();
		expect(costOf([], prices)).toBeNull();
		// An inherited property is not a price.
		expect(costOf([step('constructor', 1, 1, 0)], prices)).toBeNull();
	});

	it('sums steps and messages, and formats the line under a reply', () => {
		const u = addStep(addStep(null, step('a', 1000, 300, 800)), step('a', 234, 40, 0));
		expect(u).toMatchObject({ input: 1234, output: 340, cached: 800 });
		expect(usageLine(u)).toBe('1.2k in · 340 out · 800 cached');
		expect(usageLine({ input: 950, output: 12, cached: 0 })).toBe('950 in · 12 out');
		expect(sumUsage([u, null, u])).toMatchObject({ input: 2468, output: 680, cached: 1600 });
		expect(sumUsage([u, u]).steps).toHaveLength(4);
		expect([999, 1000, 9950, 52_300, 999_499, 1_250_000].map(formatTokens)).toEqual(['999', '1k', '9.9k', '52k', '999k', '1.3M']);
		expect([0, 0.0012, 0.5, 2.2].map(formatCost)).toEqual(['$0', '$0.0012', '$0.50', '$2.20']);
	});
});
