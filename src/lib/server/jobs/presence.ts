import type { Sql } from '../db/index';
import { emitEventNow } from '../db/queries/events';
import { countLiveWorkers } from '../db/queries/workers';

const CHECK_MS = 15_000;

/**
 * Watches whether any worker process is alive (their heartbeats) and emits `workers.changed`
 * when that flips, so pages can say "no worker is running" live. Runs in every process that
 * serves pages; several processes may each emit the same flip (harmless, the payload is the count).
 * Returns the function that stops watching.
 */
export function watchWorkerPresence(sql: Sql): () => void {
	let last: boolean | null = null;
	const check = async () => {
		const alive = await countLiveWorkers(sql);
		if (last !== null && alive > 0 !== last) await emitEventNow(sql, { type: 'workers.changed', payload: { alive } });
		last = alive > 0;
	};
	void check().catch(() => undefined);
	const timer = setInterval(() => void check().catch(() => undefined), CHECK_MS);
	timer.unref();
	return () => clearInterval(timer);
}
