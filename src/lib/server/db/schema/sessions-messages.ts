// Chat sessions and what hangs off one: messages, its task, the event log, assent windows, questions and folded history.
import { sql } from 'drizzle-orm';
import { type AnyPgColumn, bigint, bigserial, index, integer, json, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts, tsvector } from './columns';
import { operators, apiTokens } from './operators-auth';
import { alertHooks, schedules } from './alert-hooks-schedules';
import { messageOrigins, messageRoles, messageStatuses, type MessageOrigin, type MessagePart, type MessageStatus } from '../../../types/messages';
import { type RequestCause } from '../../../types/executions';

export const sessionTitledBy = ['first-message', 'agent-asked', 'agent', 'operator', 'system'] as const;
export type SessionTitledBy = (typeof sessionTitledBy)[number];

/** Who besides its owner sees a session: nobody (null), every operator read-only, or every operator read-write. */
export const sessionSharing = ['read', 'write'] as const;
export type SessionSharing = (typeof sessionSharing)[number];

export const chatSessions = pgTable(
	'chat_sessions',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		title: text('title').notNull().default('New chat'),
		/** Its owner (access/sessions.ts): only they (and admins, read-only) see it unless it is shared; null: the admins'. */
		operatorId: uuid('operator_id').references(() => operators.id, { onDelete: 'set null' }),
		/** Shared with every operator: `read` (they read it) or `write` (they also send, rename, approve in it); null: not shared. */
		shared: text('shared', { enum: sessionSharing }),
		/** Set on the chat that holds an MCP client's requests (one per token): its results re-invoke no agent. */
		mcpTokenId: uuid('mcp_token_id').references(() => apiTokens.id, { onDelete: 'set null' }),
		/** Set on an investigation an alert opened (watches/intake.ts): no typed assent, no http_get, a budget. */
		startedByHook: uuid('started_by_hook').references((): AnyPgColumn => alertHooks.id, { onDelete: 'set null' }),
		/** Set on a schedule's run (schedules/tick.ts): the same rules as an alert's investigation. */
		startedBySchedule: uuid('started_by_schedule').references((): AnyPgColumn => schedules.id, { onDelete: 'set null' }),
		/** Set on a replay (replay/run.ts): the session it re-ran. Left out of the review's statistics; never notifies. */
		replayOf: uuid('replay_of').references((): AnyPgColumn => chatSessions.id, { onDelete: 'set null' }),
		/** A replay's options and progress (see replay/types.ts ReplayState). */
		replay: jsonb('replay').$type<Record<string, unknown>>(),
		/**
		 * Who wrote the title: its first message's words, the agent (asked once after the first
		 * turn: `agent-asked` until stored), an operator (never overwritten by the agent), or the
		 * system (alerts, schedules, MCP).
		 */
		titledBy: text('titled_by', { enum: sessionTitledBy }).notNull().default('first-message'),
		/** The model its turns use (one of NOMOS_MODELS); null: the default model. */
		model: text('model'),
		pinnedAt: ts('pinned_at'),
		archivedAt: ts('archived_at'),
		/** Hidden from operators; its messages, executions and audit trail stay (the admin review still lists it). */
		deletedAt: ts('deleted_at'),
		deletedBy: uuid('deleted_by').references(() => operators.id, { onDelete: 'set null' }),
		createdAt: createdAt(),
		updatedAt: ts('updated_at').notNull().defaultNow()
	},
	(t) => [
		index('chat_sessions_updated_idx').on(t.updatedAt),
		uniqueIndex('chat_sessions_mcp_token_idx').on(t.mcpTokenId),
		index('chat_sessions_operator_idx').on(t.operatorId)
	]
);

export { messageRoles, messageStatuses, messageOrigins };
export type { MessageOrigin, MessagePart, MessageStatus };

export const messages = pgTable(
	'messages',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		sessionId: uuid('session_id')
			.notNull()
			.references(() => chatSessions.id, { onDelete: 'cascade' }),
		seq: bigserial('seq', { mode: 'number' }).notNull(),
		role: text('role', { enum: messageRoles }).notNull(),
		parts: jsonb('parts').$type<MessagePart[]>().notNull().default([]),
		/**
		 * An assistant reply's parts as the model was sent them, for its later requests: `json` keeps
		 * the text as written (jsonb reorders object keys), so the history is replayed byte for byte
		 * and a model server's prefix cache holds (agent/history.ts). `parts` stays the UI's source.
		 */
		sentParts: json('sent_parts').$type<MessagePart[]>(),
		status: text('status', { enum: messageStatuses }).notNull().default('complete'),
		origin: text('origin', { enum: messageOrigins }).notNull().default('chat'),
		error: text('error'),
		/** Bumped on every update; clients keep the snapshot with the highest rev. */
		rev: integer('rev').notNull().default(0),
		/**
		 * While `streaming`: the worker process (worker_processes.id) writing it; null when no
		 * registered process owns it (handed over, or written by a process without a worker).
		 */
		runner: uuid('runner'),
		/** An operator's message: who sent it (session or API token); the turns it starts carry it (executions/cause.ts). */
		cause: jsonb('cause').$type<RequestCause>(),
		/** Its words, tool names, inputs and results for the session search (message_search_text() is in the migration 'session_search'). */
		search: tsvector('search').generatedAlwaysAs(sql`to_tsvector('english', message_search_text("parts"))`),
		createdAt: createdAt(),
		updatedAt: ts('updated_at').notNull().defaultNow()
	},
	(t) => [
		index('messages_session_seq_idx').on(t.sessionId, t.seq),
		index('messages_streaming_idx')
			.on(t.runner)
			.where(sql`status = 'streaming'`),
		index('messages_search_idx').using('gin', t.search)
	]
);

export const taskStates = ['executing', 'awaiting_input', 'awaiting_approval', 'completed', 'failed', 'cancelled'] as const;
export type TaskState = (typeof taskStates)[number];

/** The goal a session works on; one per session. */
export const tasks = pgTable('tasks', {
	id: uuid('id').primaryKey().defaultRandom(),
	sessionId: uuid('session_id')
		.notNull()
		.unique()
		.references(() => chatSessions.id, { onDelete: 'cascade' }),
	goal: text('goal').notNull().default(''),
	state: text('state', { enum: taskStates }).notNull().default('executing'),
	createdAt: createdAt(),
	updatedAt: ts('updated_at').notNull().defaultNow()
});

/**
 * The replayable event log. A deferred trigger gives each row its final id at commit (commit
 * order) and NOTIFYs `nomos_events` with a small payload (id, session, type); subscribers read
 * the row itself.
 */
export const events = pgTable(
	'events',
	{
		id: bigserial('id', { mode: 'number' }).primaryKey(),
		sessionId: uuid('session_id'),
		type: text('type').notNull(),
		payload: jsonb('payload').$type<Record<string, unknown>>().notNull().default({}),
		createdAt: createdAt()
	},
	(t) => [index('events_session_id_idx').on(t.sessionId, t.id)]
);

export const assentWindows = pgTable(
	'assent_windows',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		sessionId: uuid('session_id')
			.notNull()
			.references(() => chatSessions.id, { onDelete: 'cascade' }),
		openedBy: uuid('opened_by').references(() => operators.id),
		openedAt: ts('opened_at').notNull().defaultNow(),
		expiresAt: ts('expires_at').notNull(),
		revokedAt: ts('revoked_at'),
		continuations: integer('continuations').notNull().default(0)
	},
	(t) => [index('assent_windows_session_idx').on(t.sessionId, t.expiresAt)]
);

export const sessionQuestions = pgTable(
	'session_questions',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		sessionId: uuid('session_id')
			.notNull()
			.references(() => chatSessions.id, { onDelete: 'cascade' }),
		messageId: uuid('message_id').references(() => messages.id, { onDelete: 'set null' }),
		prompt: text('prompt').notNull(),
		why: text('why'),
		options: jsonb('options').$type<string[]>().notNull().default([]),
		contextEntities: jsonb('context_entities').$type<string[]>().notNull().default([]),
		status: text('status', { enum: ['open', 'answered', 'cancelled'] })
			.notNull()
			.default('open'),
		answer: text('answer'),
		/** Where the answer came from: the panel in a browser, the chat box, or the HTTP API (REST, or tRPC with a token). */
		answeredVia: text('answered_via', { enum: ['panel', 'chat', 'rest'] }),
		answeredBy: uuid('answered_by').references(() => operators.id),
		createdAt: createdAt(),
		answeredAt: ts('answered_at'),
		/** Who answered (session or API token): the turn the answer resumes carries it (executions/cause.ts). */
		answerCause: jsonb('answer_cause').$type<RequestCause>(),
		/** `<message id>/<tool call id>` of the ask_operator call that raised it (see agent/tools/parked.ts). */
		callKey: text('call_key').unique()
	},
	(t) => [index('session_questions_session_idx').on(t.sessionId, t.status)]
);

/**
 * The older part of a session's history as the model sees it, folded into a summary the model
 * wrote (agent/summary.ts): every message of the session up to `throughSeq` (inclusive) is sent
 * as this text instead. The transcript, and what the operator sees, are never changed. A fold
 * extends the previous one (its text covers everything from the start), so the newest row is the
 * one used; a row is written whole, once its summary request has finished.
 */
export const historySummaries = pgTable(
	'history_summaries',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		sessionId: uuid('session_id')
			.notNull()
			.references(() => chatSessions.id, { onDelete: 'cascade' }),
		/** The last message it covers. */
		throughMessageId: uuid('through_message_id')
			.notNull()
			.references(() => messages.id, { onDelete: 'cascade' }),
		throughSeq: bigint('through_seq', { mode: 'number' }).notNull(),
		/** Messages it covers (all of the session's up to throughSeq). */
		messages: integer('messages').notNull(),
		text: text('text').notNull(),
		/** o200k tokens of the note the model is sent, and of the history it stands for (with handles). */
		tokens: integer('tokens').notNull(),
		foldedTokens: integer('folded_tokens').notNull(),
		/** The summary request's own usage, as the server reported it. */
		inputTokens: integer('input_tokens').notNull().default(0),
		outputTokens: integer('output_tokens').notNull().default(0),
		model: text('model'),
		createdAt: createdAt()
	},
	(t) => [uniqueIndex('history_summaries_session_through_idx').on(t.sessionId, t.throughSeq)]
);
