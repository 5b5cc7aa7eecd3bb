// Small key/value settings and the append-only audit trail.
import { bigserial, index, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from './columns';

/** Small key/value settings, e.g. the hashed one-time setup token. */
export const settings = pgTable('settings', {
	key: text('key').primaryKey(),
	value: jsonb('value').notNull(),
	updatedAt: ts('updated_at').notNull().defaultNow()
});

/**
 * The audit trail: every decision, host/key change, account change and sign-in, with who, when
 * and via which route. Append-only: a trigger refuses UPDATE and DELETE, and nothing cascades
 * into it (ids are kept as plain values, with the actor's name copied at write time).
 */
export const auditLog = pgTable(
	'audit_log',
	{
		id: bigserial('id', { mode: 'number' }).primaryKey(),
		at: ts('at').notNull().defaultNow(),
		actorId: uuid('actor_id'),
		actorName: text('actor_name'),
		/** e.g. execution.approved, plan.denied, host.pinned, operator.disabled, login.failed */
		action: text('action').notNull(),
		/** How the actor acted: button, ops, chat, plan, settings, login, config, system. */
		route: text('route').notNull(),
		subjectType: text('subject_type'),
		subjectId: text('subject_id'),
		sessionId: uuid('session_id'),
		detail: jsonb('detail').$type<Record<string, unknown>>().notNull().default({})
	},
	(t) => [index('audit_log_at_idx').on(t.at), index('audit_log_action_idx').on(t.action, t.at)]
);
