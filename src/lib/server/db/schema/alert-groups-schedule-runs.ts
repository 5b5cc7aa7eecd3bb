// What alert hooks and schedules produced: alert groups and schedule runs, each with the session it opened.
import { integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns';
import { alertHooks, schedules } from './alert-hooks-schedules';
import { chatSessions } from './sessions-messages';
import { incidents } from './incidents-deliveries';

/**
 * One alert group of a hook (Alertmanager's group key, a Proxmox event's type + node + job, a
 * generic alert's key): one investigation session per group, joined by later deliveries.
 */
export const alertGroups = pgTable(
	'alert_groups',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		hookId: uuid('hook_id')
			.notNull()
			.references(() => alertHooks.id, { onDelete: 'cascade' }),
		groupKey: text('group_key').notNull(),
		status: text('status', { enum: ['firing', 'resolved'] }).notNull(),
		title: text('title').notNull(),
		severity: text('severity').notNull(),
		sessionId: uuid('session_id').references(() => chatSessions.id, { onDelete: 'set null' }),
		/** Deliveries that changed nothing (same status within the dedupe window) only count here. */
		deliveries: integer('deliveries').notNull().default(1),
		firings: integer('firings').notNull().default(1),
		/** Last delivery, and when the status last changed (the dedupe and flap windows). */
		lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
		changedAt: ts('changed_at').notNull().defaultNow(),
		mutedUntil: ts('muted_until'),
		/** The incident the group's alerts belong to (its session is the group's session). */
		incidentId: uuid('incident_id').references(() => incidents.id, { onDelete: 'set null' }),
		createdAt: createdAt()
	},
	(t) => [uniqueIndex('alert_groups_hook_key_idx').on(t.hookId, t.groupKey)]
);

export const scheduleRunOutcomes = ['started', 'missed'] as const;

/**
 * One slot of a schedule, run or missed. The unique (schedule, slot) row is inserted in the
 * transaction that opens the run's session: a second worker or a retried job cannot run it twice.
 */
export const scheduleRuns = pgTable(
	'schedule_runs',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		scheduleId: uuid('schedule_id')
			.notNull()
			.references(() => schedules.id, { onDelete: 'cascade' }),
		slot: ts('slot').notNull(),
		outcome: text('outcome', { enum: scheduleRunOutcomes }).notNull(),
		sessionId: uuid('session_id').references(() => chatSessions.id, { onDelete: 'set null' }),
		createdAt: createdAt()
	},
	(t) => [uniqueIndex('schedule_runs_slot_idx').on(t.scheduleId, t.slot)]
);
