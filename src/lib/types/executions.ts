// Shapes of executions and plans as stored and as sent to the browser. Shared by the server's
// queries and the client's state, so neither side names the other's modules.

export const classifications = ['read_only', 'config_mutation', 'destructive'] as const;
export type Classification = (typeof classifications)[number];

export const executionStatuses = [
	'awaiting_approval',
	'approved',
	'running',
	'succeeded',
	'failed',
	'cancelled',
	/** Stopped part-way (worker died, SSH dropped, cancelled mid-step): it may have partly run. */
	'interrupted',
	'denied',
	'expired'
] as const;
export type ExecutionStatus = (typeof executionStatuses)[number];

/**
 * A mutation's verdict from an independent read-back after it ran: the wanted state is there
 * (`verified`), a definite other state is (`still_failing`), or the host did not answer the read
 * or its answer could not be read (`inconclusive`: never success).
 */
export const verdicts = ['verified', 'still_failing', 'inconclusive'] as const;
export type Verdict = (typeof verdicts)[number];

export const TERMINAL: readonly ExecutionStatus[] = ['succeeded', 'failed', 'cancelled', 'interrupted', 'denied', 'expired'];

export type ExecutionStep = {
	index: number;
	label: string;
	command: string;
	startedAt: string;
	finishedAt?: string;
	exitCode?: number | null;
	stdoutTail?: string;
	stderrTail?: string;
	durationMs?: number;
	/** Set on a read-back step: whether its output showed the expected result. */
	verified?: boolean;
	/** What the runner added around the approved command: the snapshot before, pruning old ones, a health check or a read-back after. */
	kind?: 'snapshot' | 'prune' | 'health' | 'verify';
	/**
	 * The command's own process group on the host, saved as soon as the host reports it, so that
	 * any process can stop it later (see ssh/quote.ts `groupedArgv`); `groupTag` is carried by
	 * every process of the group and checked before a stop signals anything.
	 */
	pgid?: number;
	groupTag?: string;
	/** Set when the runner had to stop the command (cancel, timeout, lost lease, dropped link): how that ended. */
	stop?: 'gone' | 'stopped' | 'running' | 'unreachable';
};

/** One param the operator changed before approving; `from`/`to` are undefined when unset. Nested fields use dots (`features.nesting`). */
export type ParamChange = { field: string; from?: unknown; to?: unknown };

/** An operator's edit of a pending execution, made in the transaction that approved it. */
export type ExecutionEdit = {
	by: string;
	byName: string;
	at: string;
	original: { params: Record<string, unknown>; hash: string; commandPreview: string };
	changes: ParamChange[];
};

/** Timestamps are ISO 8601 text (see db/index.ts). */
export type ExecutionRow = {
	id: string;
	requestedBySession: string | null;
	/** The name of the API token whose MCP client asked for it (its chat is that token's); null when the agent did. */
	mcpToken: string | null;
	planId: string | null;
	retryOf: string | null;
	hostName: string | null;
	target: string;
	action: string;
	params: Record<string, unknown>;
	classification: Classification;
	hash: string;
	commandPreview: string;
	reason: string;
	status: ExecutionStatus;
	steps: ExecutionStep[];
	result: string | null;
	error: string | null;
	createdAt: string;
	expiresAt: string | null;
	approvedAt: string | null;
	startedAt: string | null;
	finishedAt: string | null;
	cancelRequestedAt: string | null;
	leftovers: string | null;
	/** The read-back's verdict on a mutation that ran (null: not judged), and what it showed or why it could not tell. */
	verdict: Verdict | null;
	verdictDetail: string | null;
	edit: ExecutionEdit | null;
	decision: { decision: string; route: string; reason: string | null; decidedBy: string | null; decidedAt: string } | null;
};

export type PlanStep = {
	index: number;
	action: string;
	target: string;
	params: Record<string, unknown>;
	why: string;
	hash: string;
	commandPreview: string;
	classification: string;
	/** The execution that runs this step, made when the plan reaches it (executions/plans.ts). */
	executionId: string | null;
};

/** How an approved plan's run ended; `approved` means it is still running. */
export const PLAN_ENDS = ['succeeded', 'failed', 'cancelled', 'interrupted'] as const;
export type PlanEnd = (typeof PLAN_ENDS)[number];

export type PlanRow = {
	id: string;
	sessionId: string;
	title: string;
	steps: PlanStep[];
	status: 'proposed' | 'approved' | 'denied' | 'superseded' | PlanEnd;
	createdAt: string;
	decidedAt: string | null;
	decidedBy: string | null;
	expiresAt: string | null;
	finishedAt: string | null;
	error: string | null;
	cancelRequestedAt: string | null;
};

export type AssentWindow = { id: string; sessionId: string; openedAt: string; expiresAt: string; continuations: number };

/** An execution the operator could approve by typing: pending, requested in the agent's latest reply, shown on screen. */
export type AssentCandidate = {
	id: string;
	action: string;
	target: string;
	classification: string;
	params: Record<string, unknown>;
	/** The container's name from the inventory, when the target is a container. */
	name?: string | null;
};
