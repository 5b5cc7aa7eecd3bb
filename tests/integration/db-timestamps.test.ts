import { describe, expect, it } from 'vitest';
import { isoTimestamp, sql } from '../../src/lib/server/db/index';
import { createKnowledge, getKnowledge } from '../../src/lib/server/db/queries/knowledge';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();

/** What every timestamp the app's client returns looks like. */
const ISO_MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe('timestamps through the app client', () => {
	it('come back as ISO 8601 text in UTC with microseconds, from tables and from now()', async () => {
		const note = await createKnowledge(sql(), { title: 'clock', body: '' });
		expect(note.createdAt).toMatch(ISO_MICROS);
		expect(note.updatedAt).toMatch(ISO_MICROS);

		const [row] = await sql()<{ now: string; local: string; zone: string; arr: string[] }[]>`
			select now() as now, now()::timestamp as local, current_setting('TimeZone') as zone,
				array[now(), now() - interval '1 day'] as arr`;
		expect(row.zone).toBe('UTC');
		expect(row.now).toMatch(ISO_MICROS);
		expect(row.local).toBe(row.now);
		for (const t of row.arr) expect(t).toMatch(ISO_MICROS);
		expect(Math.abs(Date.parse(row.now) - Date.now())).toBeLessThan(60_000);
	});

	it('keep the exact microseconds, and parse with new Date() to the same instant', async () => {
		const [row] = await sql()<{ at: string; whole: string; epochMs: number }[]>`
			select '2026-11-30 16:13:38.123456+00'::timestamptz as at, '2026-11-30 16:13:38+00'::timestamptz as whole,
				(extract(epoch from '2026-11-30 16:13:38.123456+00'::timestamptz) * 1000)::float8 as "epochMs"`;
		expect(row.at).toBe('2026-11-30T16:13:38.123456Z');
		expect(row.whole).toBe('2026-11-30T16:13:38.000000Z');
		expect(new Date(row.at).toISOString()).toBe('2026-11-30T16:13:38.123Z');
		expect(new Date(row.at).getTime()).toBe(Math.floor(row.epochMs));
		// Equal-width text sorts in time order.
		expect(['2026-11-30T16:13:38.100000Z', row.at, row.whole].sort()).toEqual([row.whole, '2026-11-30T16:13:38.100000Z', row.at]);
	});

	it('accept Date objects and ISO strings as parameters', async () => {
		const d = new Date('2026-01-02T03:04:05.678Z');
		const [row] = await sql()<{ fromDate: string; fromIso: string; same: boolean; later: boolean }[]>`
			select ${d}::timestamptz as "fromDate", ${'2026-01-02T03:04:05.678901Z'}::timestamptz as "fromIso",
				${d} = ${'2026-01-02 03:04:05.678+00'}::timestamptz as same,
				${'2026-01-02T03:04:05.678901Z'}::timestamptz > ${d} as later`;
		expect(row).toEqual({ fromDate: '2026-01-02T03:04:05.678000Z', fromIso: '2026-01-02T03:04:05.678901Z', same: true, later: true });

		// Round trip through a table: what comes out goes back in as a parameter unchanged.
		const note = await createKnowledge(sql(), { title: 'round trip', body: '' });
		const [hit] = await sql()<{ id: string }[]>`select id from knowledge where id = ${note.id} and updated_at = ${note.updatedAt}`;
		expect(hit?.id).toBe(note.id);
		await sql()`update knowledge set updated_at = ${d} where id = ${note.id}`;
		expect((await getKnowledge(sql(), note.id))?.updatedAt).toBe('2026-01-02T03:04:05.678000Z');
		const [{ n }] = await sql()<{ n: number }[]>`
			select count(*)::int as n from knowledge where updated_at between ${new Date(d.getTime() - 1)} and ${'2026-01-02T03:04:05.679Z'}`;
		expect(n).toBe(1);
	});

	it('leave dates as YYYY-MM-DD and special values as Postgres writes them', async () => {
		const [row] = await sql()<{ day: string; dayParam: string; inf: string }[]>`
			select '2026-11-30'::date as day, ${'2026-12-01'}::date as "dayParam", 'infinity'::timestamptz as inf`;
		expect(row).toEqual({ day: '2026-11-30', dayParam: '2026-12-01', inf: 'infinity' });
		expect(isoTimestamp('2026-11-30 16:13:38.5+05:30')).toBe('2026-11-30T16:13:38.500000+05:30');
		expect(isoTimestamp('2026-11-30 16:13:38-07')).toBe('2026-11-30T16:13:38.000000-07:00');
		expect(isoTimestamp('2026-11-30 16:13:38', true)).toBe('2026-11-30T16:13:38.000000Z');
		expect(isoTimestamp('0044-03-15 12:00:00+00 BC')).toBe('0044-03-15 12:00:00+00 BC');
	});
});
