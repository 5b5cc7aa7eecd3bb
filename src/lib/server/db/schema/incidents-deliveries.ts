// What an alert hook received (each delivery's body, kept before anything else is done with it) and
// the incidents its alerts were grouped into.
import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from './columns';
import { alertHooks } from './alert-hooks-schedules';
import { chatSessions } from './sessions-messages';

export const incidentStatuses = ['open', 'resolved'] as const;

/**
 * Alerts about one node/guest/kind within a window (or one Alertmanager group): one incident, one
 * investigation session. In a storm (NOMOS_MAX_INVESTIGATIONS running) a new alert joins an open
 * incident instead of opening one, so `alert_count` counts every alert that joined, whatever its key.
 */
export const incidents = pgTable(
	'incidents',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		/** `node/guest/kind` ('-' for what the alert did not say). */
		key: text('key').notNull(),
		node: text('node'),
		guest: text('guest'),
		kind: text('kind').notNull(),
		/** Alertmanager's groupKey of the alert that opened it: later deliveries of that group join it. */
		groupKey: text('group_key'),
		status: text('status', { enum: incidentStatuses }).notNull().default('open'),
		title: text('title').notNull(),
		sessionId: uuid('session_id').references(() => chatSessions.id, { onDelete: 'set null' }),
		alertCount: integer('alert_count').notNull().default(1),
		firstSeenAt: ts('first_seen_at').notNull().defaultNow(),
		lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
		resolvedAt: ts('resolved_at')
	},
	(t) => [index('incidents_open_key_idx').on(t.status, t.key), index('incidents_session_idx').on(t.sessionId)]
);

/**
 * One authenticated POST to an alert hook, stored before it is answered (202): the body is the
 * source the `alerts__intake` job works from, so a job that dies is retried from it and nothing is
 * lost. `processed_at` is set in the transaction that applied it (a retry finds it done).
 */
export const alertDeliveries = pgTable(
	'alert_deliveries',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		hookId: uuid('hook_id')
			.notNull()
			.references(() => alertHooks.id, { onDelete: 'cascade' }),
		body: text('body').notNull(),
		/** sha256 of the body: a sender's retry of the same delivery has the same one. */
		bodySha: text('body_sha').notNull(),
		/** The earlier delivery this one repeats (same body within the dedupe window). */
		duplicateOf: uuid('duplicate_of'),
		receivedAt: ts('received_at').notNull().defaultNow(),
		processedAt: ts('processed_at'),
		/** What became of each alert in it: [{ groupKey, outcome, sessionId, incidentId }]. */
		outcome: jsonb('outcome')
	},
	(t) => [
		index('alert_deliveries_hook_received_idx').on(t.hookId, t.receivedAt),
		index('alert_deliveries_unprocessed_idx')
			.on(t.receivedAt)
			.where(sql`processed_at is null`)
	]
);
