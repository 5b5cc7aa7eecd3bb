import type { Task } from 'graphile-worker';
import { sql } from '../src/lib/server/db/index';
import { getHostByName } from '../src/lib/server/db/queries/hosts';
import { syncAllHosts, syncHost, type HostSyncResult } from '../src/lib/server/inventory/sync';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';

/** Set while a sync of every host runs in this process; overlapping ones return early. */
let runningAll: Promise<HostSyncResult[]> | null = null;

/**
 * `inventory__sync` — `{ host?: string }`: syncs one host, or every pinned host. Host problems
 * are recorded on the host row, never thrown, so a failing host never makes the job retry.
 * Cron runs it with a job key in its own queue (see tasks/index.ts), so runs never pile up.
 */
export const inventory__sync: Task = async (raw, helpers) => {
	const payload = parseJobPayload('inventory__sync', raw);
	let results: HostSyncResult[];
	if (payload.host) {
		const host = await getHostByName(sql(), payload.host);
		if (!host) {
			helpers.logger.error(`inventory__sync: unknown host "${payload.host}"`);
			return;
		}
		results = [await syncHost(host, { signal: helpers.abortSignal })];
	} else {
		if (runningAll) {
			helpers.logger.info('inventory__sync: a sync is already running; skipped');
			return;
		}
		runningAll = syncAllHosts({ signal: helpers.abortSignal });
		try {
			results = await runningAll;
		} finally {
			runningAll = null;
		}
	}
	for (const r of results) {
		if (!r.ok && !r.skipped) helpers.logger.warn(`inventory__sync: ${r.host}: ${r.error}`);
	}
};
