import { performance } from 'node:perf_hooks';
import { sql as appSql, type Sql } from '../db/index';
import { FACTS_VERSION, markFactsBuilt, rebuildFactsBatch, storedFactsVersion } from '../db/queries/review-facts';

/** Arbitrary constant: one facts rebuild at a time per database. */
const REBUILD_LOCK = 7_140_202_612;

export interface RebuildResult {
	version: string;
	sessions: number;
	messages: number;
	ms: number;
}

/**
 * Recomputes every message's review facts from its parts, `batch` sessions per transaction
 * (writers keep writing meanwhile; see rebuildFactsBatch), then records this code's
 * FACTS_VERSION, from which on the overview reads the facts. One rebuild at a time: the lock is
 * a session advisory lock on a connection of its own, so a crashed rebuild frees it. Null when
 * another rebuild holds it (with `wait`, waits for it instead), or with `ifStale` when the
 * stored facts are already of this version.
 */
export async function rebuildReviewFacts(
	opts: { ifStale?: boolean; wait?: boolean; batch?: number; onBatch?: (done: { sessions: number; messages: number }) => void } = {},
	sql: Sql = appSql()
): Promise<RebuildResult | null> {
	const lock = await sql.reserve();
	try {
		if (opts.wait) await lock`select pg_advisory_lock(${REBUILD_LOCK})`;
		else {
			const [got] = await lock<{ ok: boolean }[]>`select pg_try_advisory_lock(${REBUILD_LOCK}) as ok`;
			if (!got.ok) return null;
		}
		try {
			if (opts.ifStale && (await storedFactsVersion(sql)) === FACTS_VERSION) return null;
			const t0 = performance.now();
			const done = { sessions: 0, messages: 0 };
			let after: string | null = null;
			for (;;) {
				const r = await sql.begin((tx) => rebuildFactsBatch(tx, after, opts.batch ?? 250));
				if (!r.last) break;
				after = r.last;
				done.sessions += r.sessions;
				done.messages += r.messages;
				opts.onBatch?.(done);
			}
			await markFactsBuilt(sql, FACTS_VERSION);
			return { version: FACTS_VERSION, ...done, ms: performance.now() - t0 };
		} finally {
			await lock`select pg_advisory_unlock(${REBUILD_LOCK})`;
		}
	} finally {
		lock.release();
	}
}
