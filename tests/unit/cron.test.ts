import { describe, expect, it } from 'vitest';
import { graceMs, nextSlots, parseCron, slotAfter, type Cron } from '../../src/lib/schemas/cron';
import { cronExpression } from '../../src/lib/schemas/schedules';

const cron = (s: string): Cron => {
	const p = parseCron(s);
	if (!p.ok) throw new Error(p.error);
	return p.cron;
};
const iso = (ds: Date[]) => ds.map((d) => d.toISOString());
const at = (s: string) => new Date(s);

describe('cron expressions (five fields, UTC)', () => {
	it('every day at 03:00, from before and after 03:00', () => {
		expect(iso(nextSlots(cron('0 3 * * *'), at('2026-12-01T02:59:30Z'), 3))).toEqual([
			'2026-12-01T03:00:00.000Z',
			'2026-12-02T03:00:00.000Z',
			'2026-12-03T03:00:00.000Z'
		]);
		expect(iso(nextSlots(cron('0 3 * * *'), at('2026-12-01T03:00:01Z'), 1))).toEqual(['2026-12-02T03:00:00.000Z']);
		// A slot exactly now is the next one.
		expect(iso(nextSlots(cron('0 3 * * *'), at('2026-12-01T03:00:00Z'), 1))).toEqual(['2026-12-01T03:00:00.000Z']);
	});

	it('steps, ranges, lists and names', () => {
		expect(iso(nextSlots(cron('*/20 * * * *'), at('2026-12-01T10:41:00Z'), 3))).toEqual([
			'2026-12-01T11:00:00.000Z',
			'2026-12-01T11:20:00.000Z',
			'2026-12-01T11:40:00.000Z'
		]);
		expect(iso(nextSlots(cron('30 8-9 * * mon-fri'), at('2026-12-04T09:31:00Z'), 3))).toEqual([
			'2026-12-07T08:30:00.000Z',
			'2026-12-07T09:30:00.000Z',
			'2026-12-08T08:30:00.000Z'
		]);
		expect(iso(nextSlots(cron('0 0 1 jan,jul *'), at('2026-12-01T00:00:01Z'), 2))).toEqual(['2027-01-01T00:00:00.000Z', '2027-07-01T00:00:00.000Z']);
		// 7 is Sunday too; 5/15 means from 5 on, every 15.
		expect(iso(nextSlots(cron('5/15 12 * * 7'), at('2026-12-01T00:00:00Z'), 4))).toEqual([
			'2026-12-06T12:05:00.000Z',
			'2026-12-06T12:20:00.000Z',
			'2026-12-06T12:35:00.000Z',
			'2026-12-06T12:50:00.000Z'
		]);
	});

	it('both day fields restricted: a day matching either runs (as cron does)', () => {
		// The 13th, or a Friday: 2026-12-04 is a Friday, then the 11th (Friday), then the 13th.
		expect(iso(nextSlots(cron('0 0 13 * 5'), at('2026-12-01T00:00:00Z'), 3))).toEqual([
			'2026-12-04T00:00:00.000Z',
			'2026-12-11T00:00:00.000Z',
			'2026-12-13T00:00:00.000Z'
		]);
	});

	it('leap days and expressions that never run', () => {
		expect(iso(nextSlots(cron('0 0 29 2 *'), at('2026-03-01T00:00:00Z'), 1))).toEqual(['2028-02-29T00:00:00.000Z']);
		expect(nextSlots(cron('0 0 31 2 *'), at('2026-03-01T00:00:00Z'), 1)).toEqual([]);
	});

	it('refuses what is not a five-field expression, naming the field', () => {
		expect(parseCron('* * * *')).toEqual({ ok: false, error: expect.stringContaining('5 fields') });
		expect(parseCron('60 * * * *')).toEqual({ ok: false, error: expect.stringContaining('minute') });
		expect(parseCron('0 24 * * *')).toEqual({ ok: false, error: expect.stringContaining('hour') });
		expect(parseCron('0 0 0 * *')).toEqual({ ok: false, error: expect.stringContaining('day of month') });
		expect(parseCron('0 0 * 13 *')).toEqual({ ok: false, error: expect.stringContaining('month') });
		expect(parseCron('0 0 * * 8')).toEqual({ ok: false, error: expect.stringContaining('day of week') });
		expect(parseCron('*/0 * * * *').ok).toBe(false);
		expect(parseCron('5-1 * * * *').ok).toBe(false);
		expect(parseCron('@daily').ok).toBe(false);
		expect(parseCron('0 3 * * * rm -rf /').ok).toBe(false);
		expect(cronExpression.safeParse('0 0 31 2 *').error?.issues[0].message).toBe('cron: this expression never runs');
		expect(cronExpression.safeParse(' 0 3 * * * ').data).toBe('0 3 * * *');
	});

	it('a late slot may still run within half its interval, at most an hour', () => {
		expect(graceMs(cron('* * * * *'), at('2026-12-01T10:00:00Z'))).toBe(30_000);
		expect(graceMs(cron('*/10 * * * *'), at('2026-12-01T10:00:00Z'))).toBe(5 * 60_000);
		expect(graceMs(cron('0 3 * * *'), at('2026-12-01T03:00:00Z'))).toBe(3_600_000);
		expect(slotAfter(cron('0 3 * * *'), at('2026-12-01T03:00:00Z'))!.toISOString()).toBe('2026-12-02T03:00:00.000Z');
	});
});
