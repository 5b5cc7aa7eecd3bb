import { sql } from '../db/index';
import { storeDeliveries, type DeliveryRules, type NewDelivery, type StoredDelivery } from '../db/queries/alert-deliveries';
import { jobsReady, PRIORITY } from '../jobs/enqueue';
import { DEDUPE_S } from './apply';

/** Authenticated deliveries one hook may make per minute; beyond that 429 (a storm is grouped into incidents, not refused). */
export const HOOK_DELIVERIES_PER_MINUTE = 600;
/** The job that applies a stored delivery (watches/apply.ts). */
export const INTAKE_TASK = 'alerts__intake' as const;
/**
 * Its queue: graphile-worker runs one job of a named queue at a time, in every process. Deliveries
 * are applied one after another anyway (lockIncidentPlacement), so they wait in the queue instead
 * of each holding a database connection while it waits for the lock (connections the intake and the
 * turns need).
 */
export const INTAKE_QUEUE = 'alerts:intake';

const RULES: DeliveryRules = { dedupeS: DEDUPE_S, perMinute: HOOK_DELIVERIES_PER_MINUTE, task: INTAKE_TASK, queue: INTAKE_QUEUE, priority: PRIORITY.reply };
/** Deliveries stored by one statement at most. */
const MAX_GROUP = 200;

type Waiting = { d: NewDelivery; resolve: (r: StoredDelivery | null) => void; reject: (e: unknown) => void };

const g = globalThis as unknown as { __nomosDeliveryWriter?: { queue: Waiting[]; writing: boolean } };
const state = (g.__nomosDeliveryWriter ??= { queue: [], writing: false });

/**
 * Stores a delivery and queues its job, in one statement with the deliveries that arrived while
 * the previous one ran (storeDeliveries): group commit. A commit that queues a job NOTIFYs, and
 * Postgres serialises such commits, each holding the notify lock through its WAL flush, so a storm
 * of one-delivery commits queued behind each other (p99 0.7–1.1 s at 100/s on this machine); one
 * statement for the group is one round trip, one flush and one lock for all. Nothing waits for a
 * timer: a delivery that finds no statement under way goes at once. Resolves once its row is
 * durable (null: the hook's rate limit refused it). If the group's statement fails, each delivery
 * is tried again alone: one bad row does not refuse the others.
 */
export function writeDelivery(d: NewDelivery): Promise<StoredDelivery | null> {
	return new Promise((resolve, reject) => {
		state.queue.push({ d, resolve, reject });
		if (!state.writing) void drain();
	});
}

async function drain(): Promise<void> {
	state.writing = true;
	try {
		await jobsReady();
		while (state.queue.length) {
			const group = state.queue.splice(0, MAX_GROUP);
			try {
				const rows = await storeDeliveries(
					sql(),
					group.map((w) => w.d),
					RULES
				);
				group.forEach((w, i) => w.resolve(rows[i]));
			} catch (e) {
				if (group.length === 1) group[0].reject(e);
				else await Promise.all(group.map((w) => storeDeliveries(sql(), [w.d], RULES).then(([r]) => w.resolve(r), w.reject)));
			}
		}
	} catch (e) {
		for (const w of state.queue.splice(0)) w.reject(e);
	} finally {
		state.writing = false;
	}
}
