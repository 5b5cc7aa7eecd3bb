// Plans, executions and their approvals, the sessions told of results, and always-allow rules.
import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns';
import { operators, apiTokens } from './operators-auth';
import { chatSessions } from './sessions-messages';
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
} from '../../../types/executions';

export { classifications, executionStatuses };
export type { Classification, ExecutionStatus, ExecutionStep };

export const plans = pgTable('plans', {
	id: uuid('id').primaryKey().defaultRandom(),
	sessionId: uuid('session_id')
		.notNull()
		.references(() => chatSessions.id, { onDelete: 'cascade' }),
	title: text('title').notNull(),
	steps: jsonb('steps').$type<unknown[]>().notNull(),
	/** `approved` while its steps run (executions/plans.ts); then how it ended. `expired`: nobody decided it before `expires_at`. */
	status: text('status', { enum: ['proposed', 'approved', 'denied', 'superseded', 'expired', 'succeeded', 'failed', 'cancelled', 'interrupted'] })
		.notNull()
		.default('proposed'),
	createdAt: createdAt(),
	decidedAt: ts('decided_at'),
	/** HMAC-SHA256 (hex) over the decision and the steps' hashes (db/seal.ts); null before 0032. */
	mac: text('mac'),
	decidedBy: uuid('decided_by').references(() => operators.id),
	/**
	 * Both NOMOS_APPROVAL_TTL_H, as an execution's: a proposed plan may be approved until then (set
	 * when proposed; then the sweep marks it `expired`); an approved plan's steps may be requested
	 * until then (set again at the decision).
	 */
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
		/** Which credential decided: `session`, `token:<id>`, `rule:<id>`, `plan:<id>`, `system`; sealed with the rest (null on rows from before 0033). */
		credential: text('credential'),
		/** HMAC-SHA256 (hex) over the decision, made with the key outside the database (db/seal.ts); null on rows from before 0030. */
		mac: text('mac')
	},
	(t) => [uniqueIndex('approvals_execution_idx').on(t.executionId)]
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
