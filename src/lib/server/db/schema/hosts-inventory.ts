// Hosts reached over SSH and the inventory read from them.
import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { GATE_STATES } from '../../../types/gate';
import { createdAt, ts, tsvector } from './columns';

export const entities = pgTable(
	'entities',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		kind: text('kind').notNull(),
		externalId: text('external_id').notNull(),
		name: text('name').notNull(),
		hostName: text('host_name'),
		attributes: jsonb('attributes').$type<Record<string, unknown>>().notNull().default({}),
		notes: text('notes').notNull().default(''),
		search: tsvector('search')
			.notNull()
			.generatedAlwaysAs(sql`setweight(to_tsvector('english', coalesce("name", '')), 'A') || setweight(to_tsvector('english', coalesce("notes", '')), 'B')`),
		seenAt: ts('seen_at').notNull().defaultNow(),
		updatedAt: ts('updated_at').notNull().defaultNow()
	},
	(t) => [uniqueIndex('entities_kind_external_idx').on(t.kind, t.externalId), index('entities_search_idx').using('gin', t.search)]
);

/**
 * Containers a read found gone (a read-back after a destroy, or a sync), and when that read
 * started: a sync that read the host earlier and writes later must not bring them back.
 * Kept an hour; a later read that sees one again clears it.
 */
export const entityGone = pgTable(
	'entity_gone',
	{
		kind: text('kind').notNull(),
		externalId: text('external_id').notNull(),
		goneAt: ts('gone_at').notNull()
	},
	(t) => [primaryKey({ columns: [t.kind, t.externalId] })]
);

export const hosts = pgTable('hosts', {
	id: uuid('id').primaryKey().defaultRandom(),
	name: text('name').notNull().unique(),
	address: text('address').notNull(),
	port: integer('port').notNull().default(22),
	username: text('username').notNull().default('root'),
	/** The key everything but an approved mutation's changing steps runs with (the only key when there is no second). */
	keyPath: text('key_path').notNull(),
	/** The mutation key: only an approved execution's mutating steps run with it (proxmox/key-role.ts); null: keyPath does all. */
	mutationKeyPath: text('mutation_key_path'),
	/** Pinned sha256 host-key fingerprint; a host without one is never used. */
	hostKeyFingerprint: text('host_key_fingerprint'),
	/** The fingerprint last presented by the host, shown to the operator for pinning. */
	seenFingerprint: text('seen_fingerprint'),
	source: text('source', { enum: ['config', 'ui'] })
		.notNull()
		.default('ui'),
	lastCheckedAt: ts('last_checked_at'),
	lastError: text('last_error'),
	/** The last time the host answered over SSH (a check that reached it, even one whose command failed). */
	lastAnswerAt: ts('last_answer_at'),
	/** Set by the first check that got no answer (refused, timed out, dropped) after the last answer; null while it answers. */
	unansweredSince: ts('unanswered_since'),
	/** The last gate check of the host's keys (hosts/gate.ts): what they reach, why it is not right, when; null: never checked since the keys changed. */
	gateState: text('gate_state', { enum: GATE_STATES }),
	gateProblem: text('gate_problem'),
	gateCheckedAt: ts('gate_checked_at'),
	createdAt: createdAt(),
	updatedAt: ts('updated_at').notNull().defaultNow()
});

/**
 * A few samples of each storage's use per host, for its trend ("+3.1 GiB/day"): the inventory
 * sync adds one when the newest is an hour old or more and keeps the last STORAGE_SAMPLES_KEPT
 * (inventory/storage-trend.ts). Bytes.
 */
export const storageSamples = pgTable(
	'storage_samples',
	{
		hostName: text('host_name').notNull(),
		storage: text('storage').notNull(),
		at: ts('at').notNull().defaultNow(),
		used: bigint('used', { mode: 'number' }).notNull(),
		total: bigint('total', { mode: 'number' }).notNull()
	},
	(t) => [primaryKey({ columns: [t.hostName, t.storage, t.at] })]
);
