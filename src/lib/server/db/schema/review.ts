// The session review's kept figures (message and session facts, activity) and replay cases.
import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns';
import { chatSessions, messages } from './sessions-messages';
import { messageOrigins, messageRoles, messageStatuses } from '../../../types/messages';

/**
 * What the session review needs of each message (db/queries/review-facts.ts): written in the
 * transaction that writes the message, rebuilt from every message when the review's rules change
 * (the version of the stored facts is the `review.facts` setting).
 */
export const messageFacts = pgTable(
	'message_facts',
	{
		messageId: uuid('message_id')
			.primaryKey()
			.references(() => messages.id, { onDelete: 'cascade' }),
		sessionId: uuid('session_id').notNull(),
		seq: bigint('seq', { mode: 'number' }).notNull(),
		role: text('role', { enum: messageRoles }).notNull(),
		status: text('status', { enum: messageStatuses }).notNull(),
		origin: text('origin', { enum: messageOrigins }).notNull(),
		createdAt: ts('created_at').notNull(),
		/** Tool calls, and per tool of the review's TOOL_NAMES, in that order. */
		calls: integer('calls').notNull(),
		toolCounts: integer('tool_counts').array().notNull(),
		/** Failed calls per tool of TOOL_NAMES, then of any other name (null: none failed). */
		failCounts: integer('fail_counts').array(),
		/** Failed calls told that the action or tool does not exist. */
		capErrs: integer('cap_errs').notNull(),
		retries: integer('retries').notNull(),
		/** What the text parts say, as bits (TBIT in review-facts.ts). */
		tbits: integer('tbits').notNull(),
		/** Hex runs (8+) in the assistant's texts, space-separated: execution ids it names. */
		hexRuns: text('hex_runs'),
		/** What one session's review page shows of the message: its first words, an assistant's text, calls to unknown tools. */
		summary: text('summary').notNull(),
		text: text('text'),
		otherTools: text('other_tools'),
		/** get_entity calls about containers. */
		lxcRefs: integer('lxc_refs').notNull(),
		/** The model's tokens for this message (its `data-usage` part): input (cached included), output, cached input. */
		inputTokens: bigint('input_tokens', { mode: 'number' }).notNull().default(0),
		outputTokens: bigint('output_tokens', { mode: 'number' }).notNull().default(0),
		cachedTokens: bigint('cached_tokens', { mode: 'number' }).notNull().default(0),
		/** The model those tokens were spent on (its usage part's first step's; null: no usage). */
		model: text('model')
	},
	(t) => [
		index('message_facts_session_idx').on(t.sessionId, t.seq),
		// the few messages that can name an execution (see r_silent)
		index('message_facts_hex_idx')
			.on(t.sessionId)
			.where(sql`${t.hexRuns} is not null`)
	]
);

/** The sums of a session's message facts the overview ranks it by (r_sf0 in db/queries/review.ts), kept with them. */
export const sessionFacts = pgTable(
	'session_facts',
	{
		sessionId: uuid('session_id')
			.primaryKey()
			.references(() => chatSessions.id, { onDelete: 'cascade' }),
		messages: integer('messages').notNull(),
		userMessages: integer('user_messages').notNull(),
		assistantMessages: integer('assistant_messages').notNull(),
		systemMessages: integer('system_messages').notNull(),
		toolCalls: integer('tool_calls').notNull(),
		firstAt: ts('first_at').notNull(),
		lastAt: ts('last_at').notNull(),
		/** The most calls of one per-entity tool in one message. */
		n1Max: integer('n1_max').notNull(),
		nudges: integer('nudges').notNull(),
		blanks: integer('blanks').notNull(),
		retried: integer('retried').notNull(),
		notext: integer('notext').notNull(),
		/** The last assistant message reports success. */
		lastOk: boolean('last_ok').notNull(),
		toolCounts: integer('tool_counts').array().notNull(),
		failCounts: integer('fail_counts').array(),
		/** When each assistant message saying it cannot (or told the action does not exist) was written. */
		capAt: ts('cap_at').array().notNull(),
		/** When the last assistant message mentioning a failure was written. */
		mentionAt: ts('mention_at'),
		/** The model's tokens over the session's messages. */
		inputTokens: bigint('input_tokens', { mode: 'number' }).notNull().default(0),
		outputTokens: bigint('output_tokens', { mode: 'number' }).notNull().default(0),
		cachedTokens: bigint('cached_tokens', { mode: 'number' }).notNull().default(0),
		/** The same tokens per model, `{ "<model>": [input, output, cached] }`: what prices turn into a cost. */
		usageByModel: jsonb('usage_by_model').$type<Record<string, [number, number, number]>>().notNull().default({}),
		/** The one model the session's tokens went to; null when none or several (then read usage_by_model). */
		model: text('model'),
		/** The session's creation and whether it is a replay, copied from chat_sessions (neither changes): the overview filters on them without a join. */
		sessionCreatedAt: ts('session_created_at').notNull(),
		replay: boolean('replay').notNull().default(false)
	},
	(t) => [index('session_facts_created_idx').on(t.sessionCreatedAt)]
);

/**
 * What the review ranks a session by beyond its message sums (r_exs, r_qs, r_silent and
 * cap_count in db/queries/review.ts: its executions and questions, against its messages), kept
 * by triggers as executions, questions and session_facts change (drizzle/0023_session_activity.sql):
 * at commit, for every session the transaction touched, in id order. The overview reads it
 * instead of grouping every execution.
 */
export const sessionActivity = pgTable('session_activity', {
	sessionId: uuid('session_id')
		.primaryKey()
		.references(() => chatSessions.id, { onDelete: 'cascade' }),
	execSucceeded: integer('exec_succeeded').notNull().default(0),
	/** When the last succeeded execution ended. */
	lastSuccessAt: ts('last_success_at'),
	/** When the oldest execution still awaiting approval was requested. */
	pendingSince: ts('pending_since'),
	questionsOpen: integer('questions_open').notNull().default(0),
	/** Failed executions no later assistant message names or talks about. */
	silentFailed: integer('silent_failed').notNull().default(0),
	/** "Cannot" messages (session_facts.cap_at) with no succeeded execution after them. */
	capCount: integer('cap_count').notNull().default(0)
});

/**
 * A replay kept as a regression case (`npm run replay -- <name>`): the recorded inputs (operator
 * messages, tool results, outcomes and answers of the original) and the figures it must keep.
 */
export const replayCases = pgTable('replay_cases', {
	id: uuid('id').primaryKey().defaultRandom(),
	name: text('name').notNull().unique(),
	originalSessionId: uuid('original_session_id').references(() => chatSessions.id, { onDelete: 'set null' }),
	replaySessionId: uuid('replay_session_id').references(() => chatSessions.id, { onDelete: 'set null' }),
	inputs: jsonb('inputs').$type<Record<string, unknown>>().notNull(),
	expected: jsonb('expected').$type<Record<string, unknown>>().notNull(),
	createdAt: createdAt()
});
