import { describe, expect, it } from 'vitest';
import { formatAgo, formatCountdown, formatDuration, formatLocal, formatLocalTime, formatSeconds, formatWhen } from '../../src/lib/format/time';

describe('dates and durations in words', () => {
	it('says a duration in s, min, or h and min', () => {
		expect([0, 45, 59, 60, 89, 90, 719, 3599, 3600, 11_100].map(formatDuration)).toEqual([
			'0 s',
			'45 s',
			'59 s',
			'1 min',
			'1 min',
			'2 min',
			'12 min',
			'1 h 0 min',
			'1 h 0 min',
			'3 h 5 min'
		]);
	});

	it("says a step's run time to a tenth of a second", () => {
		expect([0, 420, 12_000, 1_234_567].map(formatSeconds)).toEqual(['0.0 s', '0.4 s', '12.0 s', '1234.6 s']);
	});

	it('says how long ago, from the clock it is given', () => {
		const now = Date.parse('2026-12-01T12:00:00Z');
		const at = (s: number) => new Date(now - s * 1000).toISOString();
		expect([0, 40, 89, 90, 719, 5399, 5400, 10_800].map((s) => formatAgo(at(s), now))).toEqual([
			'0 s ago',
			'40 s ago',
			'89 s ago',
			'2 min ago',
			'12 min ago',
			'90 min ago',
			'2 h ago',
			'3 h ago'
		]);
		expect(formatAgo(at(-30), now)).toBe('0 s ago');
		expect(formatAgo('2026-12-01 11:59:00+00', now)).toBe('60 s ago');
	});

	it('counts down as m:ss, never below zero', () => {
		expect([1_805_000, 65_999, 59_000, 999, 0, -5_000].map(formatCountdown)).toEqual(['30:05', '1:05', '0:59', '0:00', '0:00', '0:00']);
	});

	it('says a moment in UTC to the minute, from ISO or Postgres text', () => {
		expect(formatWhen('2025-05-01T10:00:59.123456Z')).toBe('2025-05-01 10:00 UTC');
		expect(formatWhen('2025-05-01 10:00:00+00')).toBe('2025-05-01 10:00 UTC');
		expect(formatWhen('2025-05-01T12:30:00+02:00')).toBe('2025-05-01 10:30 UTC');
		expect(formatWhen('infinity')).toBe('infinity');
	});

	it("says a moment in the reader's locale, or what stands for none", () => {
		const ts = '2026-12-01T12:34:56.000000Z';
		expect(formatLocal(ts)).toBe(new Date(ts).toLocaleString());
		expect(formatLocalTime(ts)).toBe(new Date(ts).toLocaleTimeString());
		expect(formatLocal(null, 'never')).toBe('never');
		expect(formatLocalTime(undefined)).toBe('');
	});
});
