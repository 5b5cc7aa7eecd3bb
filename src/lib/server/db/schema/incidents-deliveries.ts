// What an alert hook received (each delivery's body, kept before anything else is done with it) and
// the incidents its alerts were grouped into.
import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns';
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

export const findingVerdicts = ['present', 'resolved', 'uncertain'] as const;

/**
 * What an incident's investigation found, and where it stands: each hypothesis the agent presented
 * in the incident's session is a finding, `uncertain` until its check settles it (confirmed:
 * `present`; refuted, or gone on a re-check: `resolved`). The incident closes only when none is
 * present or uncertain (db/queries/incidents.ts resolveIncidentIfQuiet).
 */
export const findings = pgTable(
	'findings',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		incidentId: uuid('incident_id')
			.notNull()
			.references(() => incidents.id, { onDelete: 'cascade' }),
		/** What was found (the hypothesis's statement); one finding per statement per incident. */
		what: text('what').notNull(),
		/** The evidence of its latest verdict: tool call ids and the check's result. */
		evidence: text('evidence').notNull().default(''),
		verdict: text('verdict', { enum: findingVerdicts }).notNull().default('uncertain'),
		/** When a resolved alert last asked a re-check of it: within FINDING_COOLDOWN_S none is asked again. */
		recheckedAt: ts('rechecked_at'),
		createdAt: createdAt(),
		updatedAt: ts('updated_at').notNull().defaultNow()
	},
	(t) => [uniqueIndex('findings_incident_what_idx').on(t.incidentId, t.what)]
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
