// The processes running graphile-worker workers.
import { sql } from 'drizzle-orm';
import { integer, pgTable, serial, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from './columns';

/**
 * Processes running graphile-worker workers, with their worker ids and a heartbeat. A lock held
 * by a worker id that no live process claims belongs to a dead process and is released.
 */
export const workerProcesses = pgTable('worker_processes', {
	id: uuid('id').primaryKey().defaultRandom(),
	hostname: text('hostname').notNull(),
	pid: integer('pid').notNull(),
	workerIds: text('worker_ids')
		.array()
		.notNull()
		.default(sql`'{}'::text[]`),
	/**
	 * The process holds the session-level advisory lock (LIFE_LOCK_SPACE, lock_id) for its whole
	 * life: when it dies its connection closes and the lock is gone at once (see jobs/life.ts).
	 */
	lockId: serial('lock_id').notNull(),
	startedAt: ts('started_at').notNull().defaultNow(),
	beatAt: ts('beat_at').notNull().defaultNow()
});
