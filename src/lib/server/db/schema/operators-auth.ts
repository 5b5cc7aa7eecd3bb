// Operators, their sign-in sessions, API tokens and the sign-in throttle.
import { index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns';

export const operatorRoles = ['operator', 'admin'] as const;
export type OperatorRole = (typeof operatorRoles)[number];

export const operators = pgTable('operators', {
	id: uuid('id').primaryKey().defaultRandom(),
	username: text('username').notNull().unique(),
	passwordHash: text('password_hash').notNull(),
	role: text('role', { enum: operatorRoles }).notNull().default('operator'),
	/** Set when an admin disables the account: it can no longer sign in, and its sessions end. */
	disabledAt: ts('disabled_at'),
	createdAt: createdAt()
});

/** Server-side login sessions; the cookie holds a random token, the row its sha256. */
export const authSessions = pgTable(
	'auth_sessions',
	{
		tokenHash: text('token_hash').primaryKey(),
		operatorId: uuid('operator_id')
			.notNull()
			.references(() => operators.id, { onDelete: 'cascade' }),
		createdAt: createdAt(),
		expiresAt: ts('expires_at').notNull(),
		/** When the password was last given in this session (sign-in or step-up): irreversible approvals need it recent. */
		verifiedAt: ts('verified_at').notNull().defaultNow()
	},
	(t) => [index('auth_sessions_operator_idx').on(t.operatorId)]
);

export const apiTokenScopes = ['read', 'operate', 'approve'] as const;
export type ApiTokenScope = (typeof apiTokenScopes)[number];

/**
 * Personal access tokens (`Authorization: Bearer nomos_pat_…`): the token acts as its operator,
 * capped by its scope (read: queries and streams; operate: also mutations; approve: also approving
 * what neither it requested nor needs a person — see executions/authority.ts). Only the sha256 of
 * the token is stored. Revoked rows stay, so audit entries naming a token still resolve.
 */
export const apiTokens = pgTable(
	'api_tokens',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		operatorId: uuid('operator_id')
			.notNull()
			.references(() => operators.id, { onDelete: 'cascade' }),
		name: text('name').notNull(),
		scope: text('scope', { enum: apiTokenScopes }).notNull(),
		tokenHash: text('token_hash').notNull().unique(),
		/** The first characters of the token (`nomos_pat_ab12`), to recognise it in the list. */
		hint: text('hint').notNull(),
		createdAt: createdAt(),
		expiresAt: ts('expires_at'),
		lastUsedAt: ts('last_used_at'),
		revokedAt: ts('revoked_at')
	},
	(t) => [index('api_tokens_operator_idx').on(t.operatorId)]
);

/** Failed sign-ins per username and per client address, for backoff; rows are upserted. */
export const loginThrottle = pgTable('login_throttle', {
	key: text('key').primaryKey(),
	failures: integer('failures').notNull().default(0),
	lastFailureAt: ts('last_failure_at').notNull().defaultNow(),
	blockedUntil: ts('blocked_until')
});
