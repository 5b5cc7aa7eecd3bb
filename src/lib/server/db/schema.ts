import { sql } from 'drizzle-orm';
import {
	bigint,
	type AnyPgColumn,
	bigserial,
	boolean,
	check,
	customType,
	index,
	integer,
	jsonb,
	pgTable,
	primaryKey,
	serial,
	text,
	timestamp,
	uniqueIndex,
	uuid
} from 'drizzle-orm/pg-core';
import { messageOrigins, messageRoles, messageStatuses, type MessageOrigin, type MessagePart, type MessageStatus } from '../../types/messages';
import { alertHookKinds } from '../../schemas/watches';
import {
	classifications,
	executionStatuses,
	verdicts,
	type Classification,
	type BeforeApproval,
	type ExecutionEdit,
	type ExecutionStatus,
	type ExecutionStep,
	type RequestCause
} from '../../types/executions';

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });
// 'string': what the app's postgres.js parsers return (ISO 8601, see db/index.ts); no effect on the SQL.
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'string' });
const createdAt = () => ts('created_at').notNull().defaultNow();

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

/** Small key/value settings, e.g. the hashed one-time setup token. */
export const settings = pgTable('settings', {
	key: text('key').primaryKey(),
	value: jsonb('value').notNull(),
	updatedAt: ts('updated_at').notNull().defaultNow()
});

export const sessionTitledBy = ['first-message', 'agent-asked', 'agent', 'operator', 'system'] as const;
export type SessionTitledBy = (typeof sessionTitledBy)[number];

export const chatSessions = pgTable(
	'chat_sessions',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		title: text('title').notNull().default('New chat'),
		operatorId: uuid('operator_id').references(() => operators.id, { onDelete: 'set null' }),
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
	(t) => [index('chat_sessions_updated_idx').on(t.updatedAt), uniqueIndex('chat_sessions_mcp_token_idx').on(t.mcpTokenId)]
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
 * The replayable event log. An insert trigger NOTIFYs `nomos_events` with a small payload
 * (id, session, type); subscribers read the row itself.
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

export const knowledge = pgTable(
	'knowledge',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		title: text('title').notNull(),
		body: text('body').notNull().default(''),
		source: text('source', { enum: ['page', 'file', 'inventory'] })
			.notNull()
			.default('page'),
		sourcePath: text('source_path').unique(),
		search: tsvector('search')
			.notNull()
			.generatedAlwaysAs(sql`setweight(to_tsvector('english', coalesce("title", '')), 'A') || setweight(to_tsvector('english', coalesce("body", '')), 'B')`),
		createdAt: createdAt(),
		updatedAt: ts('updated_at').notNull().defaultNow()
	},
	(t) => [index('knowledge_search_idx').using('gin', t.search)]
);

export const hosts = pgTable('hosts', {
	id: uuid('id').primaryKey().defaultRandom(),
	name: text('name').notNull().unique(),
	address: text('address').notNull(),
	port: integer('port').notNull().default(22),
	username: text('username').notNull().default('root'),
	keyPath: text('key_path').notNull(),
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
	createdAt: createdAt(),
	updatedAt: ts('updated_at').notNull().defaultNow()
});

export { classifications, executionStatuses };
export type { Classification, ExecutionStatus, ExecutionStep };

export const plans = pgTable('plans', {
	id: uuid('id').primaryKey().defaultRandom(),
	sessionId: uuid('session_id')
		.notNull()
		.references(() => chatSessions.id, { onDelete: 'cascade' }),
	title: text('title').notNull(),
	steps: jsonb('steps').$type<unknown[]>().notNull(),
	/** `approved` while its steps run (executions/plans.ts); then how it ended. */
	status: text('status', { enum: ['proposed', 'approved', 'denied', 'superseded', 'succeeded', 'failed', 'cancelled', 'interrupted'] })
		.notNull()
		.default('proposed'),
	createdAt: createdAt(),
	decidedAt: ts('decided_at'),
	/** HMAC-SHA256 (hex) over the decision and the steps' hashes (db/seal.ts); null before 0032. */
	mac: text('mac'),
	decidedBy: uuid('decided_by').references(() => operators.id),
	/** An approved plan's steps may be requested until then (NOMOS_APPROVAL_TTL_H after the decision). */
	expiresAt: ts('expires_at'),
	/** When its run ended (succeeded, or stopped at a step). */
	finishedAt: ts('finished_at'),
	/** Why it stopped, when not at a step's own outcome (a step that could not be prepared again). */
	error: text('error'),
	/** Stop on the plan card: the running step is cancelled, the rest are not run. */
	cancelRequestedAt: ts('cancel_requested_at'),
	/** When its end was told to the agent (claimed by the one continuation that tells it). */
	reportedAt: ts('reported_at'),
	/** `<message id>/<tool call id>` of the propose_plan call that made it (see agent/tools/parked.ts). */
	callKey: text('call_key').unique(),
	/** The alert its session investigates resolved while it waited for approval (watches/intake.ts); cleared when it fires again. */
	alertResolvedAt: ts('alert_resolved_at'),
	/** Who caused it: the credential that started the agent's turn, and the outside text it had read (executions/cause.ts). */
	cause: jsonb('cause').$type<RequestCause>(),
	/** The API token whose messages caused it: that token never approves it (executions/authority.ts). */
	requestedWithToken: uuid('requested_with_token').references(() => apiTokens.id, { onDelete: 'set null' })
});

export const executions = pgTable(
	'executions',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		requestedBySession: uuid('requested_by_session').references(() => chatSessions.id, {
			onDelete: 'set null'
		}),
		planId: uuid('plan_id').references(() => plans.id),
		retryOf: uuid('retry_of'),
		hostName: text('host_name'),
		target: text('target').notNull(),
		action: text('action').notNull(),
		params: jsonb('params').$type<Record<string, unknown>>().notNull().default({}),
		classification: text('classification', { enum: classifications }).notNull(),
		/** sha256 over action, target and canonical params: what an approval names. */
		hash: text('hash').notNull(),
		commandPreview: text('command_preview').notNull().default(''),
		reason: text('reason').notNull().default(''),
		status: text('status', { enum: executionStatuses }).notNull(),
		steps: jsonb('steps').$type<ExecutionStep[]>().notNull().default([]),
		result: text('result'),
		error: text('error'),
		leaseUntil: ts('lease_until'),
		/** Set when the operator asked to cancel a running execution (the card says "cancelling…"). */
		cancelRequestedAt: ts('cancel_requested_at'),
		/** What a failed, cancelled or interrupted mutation left on its target, read back afterwards. */
		leftovers: text('leftovers'),
		/**
		 * Set when that read-back (or the stop of the command) could not be done because the host
		 * did not answer: when to try again. Cleared once the host answered and it was read.
		 */
		leftoversRecheckAt: ts('leftovers_recheck_at'),
		/**
		 * A mutation's verdict from an independent read-back after it ran (executions/verdict.ts):
		 * verified, still_failing or inconclusive (the host did not answer the read); null when
		 * nothing was judged (read-only, not run, interrupted). An exit status is never a verdict.
		 */
		verdict: text('verdict', { enum: verdicts }),
		/** What the read-back showed, or why it could not tell. */
		verdictDetail: text('verdict_detail'),
		/** Set when an operator edited the params before approving: who, the original, what changed. */
		edit: jsonb('edit').$type<ExecutionEdit>(),
		/** The alert its session investigates resolved while it waited for approval (watches/intake.ts); cleared when it fires again. */
		alertResolvedAt: ts('alert_resolved_at'),
		/**
		 * How many times a live worker took it over after the process running it stopped (a
		 * repeatable action: proxmox/actions.ts `resume`; executions/resume.ts), and why the last time.
		 */
		resumes: integer('resumes').notNull().default(0),
		resumedBecause: text('resumed_because'),
		/** What the host said when it was requested (executions/before-approval.ts); `cannot_run` is never approved. */
		beforeApproval: jsonb('before_approval').$type<BeforeApproval>(),
		/** While `running`: the worker process (worker_processes.id) running it. */
		runner: uuid('runner'),
		/** `<message id>/<tool call id>` of the request_execution call that made it (see agent/tools/parked.ts). */
		callKey: text('call_key').unique(),
		/** The API token the request came with (an MCP client's, a Retry sent with a token): that token never approves it. */
		requestedWithToken: uuid('requested_with_token').references(() => apiTokens.id, { onDelete: 'set null' }),
		/** Who caused it: the credential that started the agent's turn, and the outside text it had read (executions/cause.ts). */
		cause: jsonb('cause').$type<RequestCause>(),
		createdAt: createdAt(),
		expiresAt: ts('expires_at'),
		approvedAt: ts('approved_at'),
		startedAt: ts('started_at'),
		finishedAt: ts('finished_at')
	},
	(t) => [
		index('executions_status_idx').on(t.status),
		index('executions_session_idx').on(t.requestedBySession),
		index('executions_recheck_idx')
			.on(t.leftoversRecheckAt)
			.where(sql`${t.leftoversRecheckAt} is not null`),
		index('executions_inconclusive_idx')
			.on(t.finishedAt)
			.where(sql`${t.verdict} = 'inconclusive'`),
		check('executions_verdict_check', sql`${t.verdict} in ('verified', 'still_failing', 'inconclusive')`)
	]
);

export const approvals = pgTable(
	'approvals',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		executionId: uuid('execution_id')
			.notNull()
			.references(() => executions.id),
		/** The execution hash this decision names; a different hash is not approved by it. */
		hash: text('hash').notNull(),
		decision: text('decision', { enum: ['approved', 'denied'] }).notNull(),
		route: text('route', { enum: ['button', 'ops', 'chat', 'plan', 'rest'] }).notNull(),
		reason: text('reason'),
		decidedBy: uuid('decided_by').references(() => operators.id),
		/** For route `chat`: the operator message whose words approved it. */
		messageId: uuid('message_id'),
		decidedAt: ts('decided_at').notNull().defaultNow(),
		/** HMAC-SHA256 (hex) over the decision, made with the key outside the database (db/seal.ts); null on rows from before 0032. */
		mac: text('mac')
	},
	(t) => [uniqueIndex('approvals_execution_idx').on(t.executionId)]
);

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

/** Failed sign-ins per username and per client address, for backoff; rows are upserted. */
export const loginThrottle = pgTable('login_throttle', {
	key: text('key').primaryKey(),
	failures: integer('failures').notNull().default(0),
	lastFailureAt: ts('last_failure_at').notNull().defaultNow(),
	blockedUntil: ts('blocked_until')
});

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

/** Links an execution to the chat session that should hear about its result. */
export const executionSessions = pgTable(
	'execution_sessions',
	{
		executionId: uuid('execution_id')
			.notNull()
			.references(() => executions.id, { onDelete: 'cascade' }),
		sessionId: uuid('session_id')
			.notNull()
			.references(() => chatSessions.id, { onDelete: 'cascade' }),
		createdAt: createdAt(),
		/** Set atomically before a continuation turn runs, so a result is continued once. */
		continuedAt: ts('continued_at')
	},
	(t) => [primaryKey({ columns: [t.executionId, t.sessionId] })]
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

/**
 * Always-allow rules: an admin's standing approval of `action` on a target pattern (see
 * schemas/allow-rules.ts), bounded by param constraints. Never for destructive actions (refused
 * when created and when matched). Revoked rows stay, so the audit's `rule:<id>` still resolves.
 */
export const allowRules = pgTable(
	'allow_rules',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		action: text('action').notNull(),
		pattern: text('pattern').notNull(),
		constraints: jsonb('constraints').$type<unknown[]>().notNull().default([]),
		note: text('note').notNull().default(''),
		createdBy: uuid('created_by').references(() => operators.id),
		createdAt: createdAt(),
		updatedAt: ts('updated_at').notNull().defaultNow(),
		expiresAt: ts('expires_at'),
		revokedAt: ts('revoked_at'),
		revokedBy: uuid('revoked_by').references(() => operators.id)
	},
	(t) => [index('allow_rules_action_idx').on(t.action)]
);

export const webhookKinds = ['ntfy', 'json'] as const;
export type WebhookKind = (typeof webhookKinds)[number];

/**
 * Outgoing webhooks an admin configured: told when an approval or a question starts waiting.
 * `url` and `headers` may carry secrets (ntfy topics, tokens): they are sent, never shown back
 * in full (see notify/mask.ts).
 */
export const webhooks = pgTable('webhooks', {
	id: uuid('id').primaryKey().defaultRandom(),
	name: text('name').notNull(),
	kind: text('kind', { enum: webhookKinds }).notNull(),
	url: text('url').notNull(),
	headers: jsonb('headers').$type<Record<string, string>>().notNull().default({}),
	enabled: boolean('enabled').notNull().default(true),
	createdBy: uuid('created_by').references(() => operators.id, { onDelete: 'set null' }),
	createdAt: createdAt()
});

/** One delivery attempt of a webhook (kept short per webhook): what Settings shows as its last failures. */
export const webhookDeliveries = pgTable(
	'webhook_deliveries',
	{
		id: bigserial('id', { mode: 'number' }).primaryKey(),
		webhookId: uuid('webhook_id')
			.notNull()
			.references(() => webhooks.id, { onDelete: 'cascade' }),
		noticeKind: text('notice_kind').notNull(),
		ok: boolean('ok').notNull(),
		httpStatus: integer('http_status'),
		error: text('error'),
		attempt: integer('attempt').notNull().default(1),
		/** No retry follows (it worked, it was a test, or the attempts are used up). */
		final: boolean('final').notNull().default(true),
		at: ts('at').notNull().defaultNow()
	},
	(t) => [index('webhook_deliveries_webhook_idx').on(t.webhookId, t.at)]
);

export type AlertHookKind = (typeof alertHookKinds)[number];

/**
 * An incoming alert endpoint (`POST /api/hooks/<id>`), made by an admin in Settings. Its secret is
 * shown once, at creation and on rotation, and kept as its SHA-256 (`Authorization: Bearer` is
 * compared by hash). Only a hook that accepts `X-Nomos-Signature` (`signed`) keeps the secret
 * itself, which an HMAC of the body needs (check `alert_hooks_plain_secret_only_signed`).
 */
export const alertHooks = pgTable(
	'alert_hooks',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		name: text('name').notNull(),
		kind: text('kind', { enum: alertHookKinds }).notNull(),
		/** Hex SHA-256 of the secret. */
		secretHash: text('secret_hash').notNull(),
		/** Accepts an HMAC of the body: then (and only then) the secret itself is kept in `secret`. */
		signed: boolean('signed').notNull().default(false),
		secret: text('secret'),
		/** Alerts still arrive and are recorded while muted, but open no investigation. */
		mutedUntil: ts('muted_until'),
		revokedAt: ts('revoked_at'),
		lastReceivedAt: ts('last_received_at'),
		/** The per-minute delivery counter (rate limit, shared by every process). */
		windowStart: ts('window_start'),
		windowCount: integer('window_count').notNull().default(0),
		createdBy: uuid('created_by').references(() => operators.id, { onDelete: 'set null' }),
		createdAt: createdAt()
	},
	(t) => [check('alert_hooks_plain_secret_only_signed', sql`${t.signed} or ${t.secret} is null`)]
);

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
		createdAt: createdAt()
	},
	(t) => [uniqueIndex('alert_groups_hook_key_idx').on(t.hookId, t.groupKey)]
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
