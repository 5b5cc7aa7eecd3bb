import type { HypothesisSet } from '../../messages/hypotheses';
import type { FindingKind, Severity } from '../db/review-rules';

export type { FindingKind, Severity };

export interface Finding {
	kind: FindingKind;
	severity: Severity;
	title: string;
	evidence: { messageIndexes: number[]; detail: string[] };
	fix: string;
}

export interface ReviewMessage {
	/** 0-based position in the session. */
	index: number;
	id: string;
	role: 'user' | 'assistant' | 'system';
	origin: string;
	status: string;
	createdAt: string;
	toolCalls: number;
	/** Tools called in the message, most called first. */
	topTools: { tool: string; n: number }[];
	/** The first ~120 characters of its text (or note). */
	summary: string;
	tokens: TokenTotals;
}

/** The model's tokens: input (cached included), output, cached input. */
export interface TokenTotals {
	input: number;
	output: number;
	cached: number;
}

export interface ReviewTotals {
	messages: number;
	byRole: { user: number; assistant: number; system: number };
	toolCalls: number;
	firstAt: string | null;
	lastAt: string | null;
	durationSeconds: number;
	/** `failed` leaves out the executions shown as not run (execution-status.ts), counted in `notRun`. */
	executions: { requested: number; approved: number; succeeded: number; failed: number; notRun: number; denied: number; expired: number };
	questions: { asked: number; answered: number; open: number };
	tokens: TokenTotals;
	/** USD at NOMOS_PRICES; null when a model used has no price (or none are set). */
	costUsd: number | null;
}

/** A fold of the session's older history into a summary the model wrote (agent/summary.ts). */
export interface ReviewSummary {
	/** The review index of the last message it covers (null: that message is not listed). */
	throughIndex: number | null;
	/** Messages it covers, from the session's start. */
	messages: number;
	/** o200k tokens of the summary as sent, and of the history it stands for. */
	tokens: number;
	foldedTokens: number;
	/** The summary request's own usage. */
	request: { input: number; output: number };
	model: string | null;
	createdAt: string;
	text: string;
}

export interface SessionReview {
	session: { id: string; title: string; createdAt: string; owner: string | null };
	/** The operator's first message: what the session was for. */
	goal: string;
	totals: ReviewTotals;
	outcome: { reached: boolean; reason: string };
	/** Most severe first. */
	findings: Finding[];
	messages: ReviewMessage[];
	/** The history summaries the agent was sent instead of older messages, oldest fold first. */
	summaries: ReviewSummary[];
	/** The hypotheses the agent presented (messages/hypotheses.ts), with `index`: the review index of the message that presented them. */
	hypotheses: Array<HypothesisSet & { index: number | null }>;
	/** Its mutations whose read-back did not verify them (executions/verdict.ts): never to be read as done. */
	unverified: UnverifiedExecution[];
}

export interface UnverifiedExecution {
	executionId: string;
	action: string;
	target: string;
	verdict: 'inconclusive' | 'still_failing';
	detail: string | null;
	finishedAt: string | null;
}

export type Outcome = 'reached' | 'not_reached';

export interface OverviewFilter {
	/** Inclusive dates (YYYY-MM-DD, UTC) on the session's creation. */
	from?: string;
	to?: string;
	outcome?: Outcome;
	/** How many ranked sessions to return (default 50). */
	limit?: number;
}

export interface OverviewSession {
	id: string;
	title: string;
	createdAt: string;
	messages: number;
	toolCalls: number;
	score: number;
	kinds: FindingKind[];
	/** The worst severity among its findings, if any. */
	worst: Severity | null;
	reached: boolean;
	tokens: TokenTotals;
	/** With NOMOS_PRICES covering every model it used; else null. */
	costUsd: number | null;
}

/** Sessions by what started them; for alert investigations, the median time to findings and to an approved fix (seconds). */
export interface OriginCounts {
	operator: number;
	alert: number;
	schedule: number;
	alerts: { withFindings: number; findingsMedianS: number | null; withFix: number; fixMedianS: number | null };
}

export interface ReviewOverview {
	filter: { from: string | null; to: string | null; outcome: Outcome | null };
	/** Sessions in the filter (all of them, not only the ranked page). */
	sessionCount: number;
	reachedCount: number;
	toolCallCount: number;
	/** Tokens over every session in the filter. */
	tokens: TokenTotals;
	/** What they cost, with NOMOS_PRICES covering every model used; else null. */
	costUsd: number | null;
	sessions: OverviewSession[];
	/** Sessions having each finding kind, most frequent first. */
	kinds: { kind: FindingKind; sessions: number }[];
	/** The sessions that used the most tokens (at most 20), most first. */
	tokenSessions: { id: string; title: string; tokens: TokenTotals }[];
	/** Calls per tool with the share that failed, most called first. */
	tools: { tool: string; calls: number; failed: number; failureRate: number }[];
	/** Read from the stored message facts, or from every message's parts while those are rebuilt. */
	source: 'facts' | 'parts';
	/** Sessions in the date range by origin (the outcome filter does not apply). */
	origins: OriginCounts;
}
