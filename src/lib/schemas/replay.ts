// A replay's contract (see docs/replay.md): what is recorded of an original session, a replay's
// options and progress, and the figures two sessions are compared by. Stored as JSON (on
// chat_sessions.replay and in replay_cases) and parsed with these schemas when read back.
import { z } from 'zod';

/** One tool call of the original and what it was answered: the model saw `output`. */
export const recordedCall = z.object({
	tool: z.string(),
	/** canonicalJson of what identifies the call (see replayKey). */
	key: z.string(),
	output: z.unknown(),
	/**
	 * What came of it later, for the calls that wait on the operator: an execution's final status
	 * and output, a plan's decision and end, a question's answer.
	 */
	outcome: z.record(z.string(), z.unknown()).nullable().default(null)
});
export type RecordedCall = z.infer<typeof recordedCall>;

/** Everything a replay answers from: the operator's messages and the original's tool calls, in order. */
export const recording = z.object({
	operatorMessages: z.array(z.string()),
	calls: z.array(recordedCall)
});
export type Recording = z.infer<typeof recording>;

export const replayStatuses = ['queued', 'running', 'done', 'failed'] as const;

/** chat_sessions.replay of a replay session. */
export const replayState = z.object({
	/** Run a read the original never made live (read-only tools only). */
	live: z.boolean().default(false),
	status: z.enum(replayStatuses),
	/** Operator messages sent so far, of `total`. */
	sent: z.number().int().default(0),
	total: z.number().int().default(0),
	error: z.string().nullable().default(null),
	/** Set when the replay runs a saved regression case: its inputs are the recording. */
	caseId: z.string().nullable().default(null)
});
export type ReplayState = z.infer<typeof replayState>;

/** What a session is compared by (replay/compare.ts). */
export const sessionFigures = z.object({
	toolCalls: z.array(z.string()),
	/** `action target` of every request and plan step (replayed ones included). */
	requests: z.array(z.string()),
	approvalsNeeded: z.number().int(),
	questions: z.number().int(),
	operatorMessages: z.number().int(),
	/** Operator messages that only told the agent to go on. */
	continues: z.number().int(),
	tokens: z.number().int(),
	/** Finding kinds of the review (the goal's outcome aside). */
	findings: z.array(z.string()),
	goalReached: z.boolean()
});
export type SessionFigures = z.infer<typeof sessionFigures>;

/** What the operator does in a session: messages, approvals and answers. */
export const operatorActions = (f: SessionFigures) => f.operatorMessages + f.approvalsNeeded + f.questions;

export const caseName = z
	.string()
	.trim()
	.min(1)
	.max(100)
	.regex(/^[a-z0-9][a-z0-9._-]*$/i, 'letters, digits, dot, dash and underscore');
