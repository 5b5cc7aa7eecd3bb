// What opens a session without an operator: incoming alert hooks and recurring schedules.
import { sql } from 'drizzle-orm';
import { boolean, check, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns';
import { operators } from './operators-auth';
import { alertHookKinds } from '../../../schemas/watches';

export type AlertHookKind = (typeof alertHookKinds)[number];

/**
 * An incoming alert endpoint (`POST /api/hooks/<id>`), made by an admin in Settings. Its secret is
 * shown once, at creation and on rotation, and kept as its SHA-256 (`Authorization: Bearer` is
 * compared by hash). Only a hook that accepts `X-Nomos-Signature` (`signed`) keeps the secret
 * itself, which an HMAC of the body needs: sealed (AES-256-GCM) with the key kept outside the
 * database (watches/sealed-secret.ts), opened only to check a signature (check
 * `alert_hooks_secret_only_signed`).
 */
export const alertHooks = pgTable(
	'alert_hooks',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		name: text('name').notNull(),
		kind: text('kind', { enum: alertHookKinds }).notNull(),
		/** Hex SHA-256 of the secret. */
		secretHash: text('secret_hash').notNull(),
		/** Accepts an HMAC of the body: then (and only then) the secret itself is kept, sealed, in `secret_sealed`. */
		signed: boolean('signed').notNull().default(false),
		/** The plain secret of hooks from before 0033: sealed into `secret_sealed` and emptied at boot (sealPlainHookSecrets). */
		secret: text('secret'),
		/** `v1.<iv>.<ciphertext>.<tag>` (base64url): the secret under AES-256-GCM, bound to the hook's id. */
		secretSealed: text('secret_sealed'),
		/** Alerts still arrive and are recorded while muted, but open no investigation. */
		mutedUntil: ts('muted_until'),
		revokedAt: ts('revoked_at'),
		lastReceivedAt: ts('last_received_at'),
		createdBy: uuid('created_by').references(() => operators.id, { onDelete: 'set null' }),
		createdAt: createdAt()
	},
	(t) => [check('alert_hooks_secret_only_signed', sql`${t.signed} or (${t.secret} is null and ${t.secretSealed} is null)`)]
);

/**
 * A recurring task an admin made in Settings: a five-field cron expression evaluated in UTC and a
 * prompt. `next_at` is the slot its queued `schedules__tick` job is for (null while paused or
 * deleted): a job for any other slot is stale and does nothing. Deleting keeps the row (its runs
 * and sessions still name it).
 */
export const schedules = pgTable('schedules', {
	id: uuid('id').primaryKey().defaultRandom(),
	name: text('name').notNull(),
	cron: text('cron').notNull(),
	prompt: text('prompt').notNull(),
	enabled: boolean('enabled').notNull().default(true),
	nextAt: ts('next_at'),
	createdBy: uuid('created_by').references(() => operators.id, { onDelete: 'set null' }),
	createdAt: createdAt(),
	updatedAt: ts('updated_at').notNull().defaultNow(),
	deletedAt: ts('deleted_at')
});
