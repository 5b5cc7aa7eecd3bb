// Storage use per host in the inventory (issue #45): each sync reads `pvesh get
// /nodes/localhost/storage` beside its other reads, files the rows on the host entity
// (`storage`, or `storageError` when the read failed: unknown, never "none"), and keeps a few
// samples per storage (storage_samples) to say a trend: "+3.1 GiB/day over 5 h".
import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { addStorageSample, listStorageSamples } from '../db/queries/storage-samples';
import { parseStorage, storageLine, type StorageFigures } from '../proxmox/health-parse';

export const STORAGE_ARGV = ['pvesh', 'get', '/nodes/localhost/storage', '--output-format', 'json'];
/** A new sample when the newest is at least this old; the last STORAGE_SAMPLES_KEPT are kept. */
export const SAMPLE_EVERY_MS = 60 * 60_000;
export const STORAGE_SAMPLES_KEPT = 24;
/** A trend is said only over samples at least this far apart. */
export const TREND_MIN_SPAN_MS = 2 * 60 * 60_000;

const GiB = 1024 ** 3;

/** The rows as the host entity keeps them, or why they are unknown. */
export function storageAttributes(read: { text: string } | { error: string }): { storage: StorageFigures[] } | { storageError: string } {
	if ('error' in read) return { storageError: read.error };
	try {
		return {
			storage: parseStorage(read.text).map(({ storage, type, content, active, enabled, shared, total, used, avail }) => ({
				storage,
				type,
				content,
				active,
				enabled,
				shared,
				total,
				used,
				avail
			}))
		};
	} catch (e) {
		return { storageError: (e as Error).message };
	}
}

/** Adds a sample per active storage whose newest is SAMPLE_EVERY_MS old (or none), then keeps the last few. */
export async function recordStorageSamples(sql: Sql | TransactionSql, hostName: string, rows: StorageFigures[], at: string): Promise<void> {
	const figures = rows.filter((r) => r.active !== false && r.enabled !== false && typeof r.total === 'number' && r.total > 0 && typeof r.used === 'number');
	for (const r of figures)
		await addStorageSample(sql, { hostName, storage: r.storage, at, used: r.used!, total: r.total! }, { everyMs: SAMPLE_EVERY_MS, keep: STORAGE_SAMPLES_KEPT });
}

/** `+3.1 GiB/day over 5 h` from the oldest and newest samples, when they are TREND_MIN_SPAN_MS apart or more. */
export function trendText(samples: { at: string; used: number }[]): string | undefined {
	if (samples.length < 2) return undefined;
	const sorted = [...samples].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
	const [first, last] = [sorted[0], sorted.at(-1)!];
	const span = Date.parse(last.at) - Date.parse(first.at);
	if (span < TREND_MIN_SPAN_MS) return undefined;
	const perDay = (last.used - first.used) / GiB / (span / 86_400_000);
	const over = span >= 2 * 86_400_000 ? `${Math.round(span / 86_400_000)} d` : `${Math.round(span / 3_600_000)} h`;
	const rate = Math.abs(perDay) < 0.05 ? 'steady' : `${perDay > 0 ? '+' : '−'}${Math.abs(perDay).toFixed(1)} GiB/day`;
	return `${rate} over ${over}`;
}

/** Each storage's trend on a host, by storage id. */
export async function storageTrends(sql: Sql | TransactionSql, hostName: string): Promise<Map<string, string>> {
	const rows = await listStorageSamples(sql, hostName);
	const by = new Map<string, { at: string; used: number }[]>();
	for (const r of rows) by.set(r.storage, [...(by.get(r.storage) ?? []), { at: r.at, used: r.used }]);
	const out = new Map<string, string>();
	for (const [s, samples] of by) {
		const t = trendText(samples);
		if (t) out.set(s, t);
	}
	return out;
}

/** The host's storage lines for get_state_snapshot: use, free, trend; unknown with why when the read failed. */
export function storageLines(attributes: Record<string, unknown>, trends: Map<string, string>): string[] {
	if (typeof attributes.storageError === 'string') return [`unknown: ${attributes.storageError}`];
	const rows = attributes.storage as StorageFigures[] | undefined;
	if (!rows) return ['unknown: not read yet'];
	return rows.map((r) => storageLine(r, trends.get(r.storage)));
}
