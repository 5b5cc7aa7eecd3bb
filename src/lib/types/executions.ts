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
	/**
	 * What the runner added around the approved command: the snapshot before, pruning old ones, a
	 * health check or a read-back after, a resume's reads (executions/resume.ts), a pre-run check it had to wait
	 * for (shown only when its host was slow), or the reads of a failed start's task log (`cause`).
	 */
	kind?: 'snapshot' | 'prune' | 'health' | 'resume' | 'check' | 'verify' | 'cause';
	/** While the step's host is being waited for (a slow or unreachable host): "waiting for strong to answer — 45 s". */
	waiting?: string;
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

/**
 * What was read on the host when a mutation was requested, before anyone could approve it
 * (executions/before-approval.ts): `cannot_run` is the host's definite answer that it cannot run
 * (a disk that would shrink, a running guest to destroy) and such an execution is never approved;
 * `unknown` means the host did not answer in time, so approval stays possible (the runner checks
 * again right before it runs).
 */
/**
 * What the host said of a request before approval (executions/before-approval.ts): it cannot run as
 * asked, it could not be checked, or a fact the approver should see (`note`: a node upgrade that
 * installs a new kernel needs a reboot afterwards).
 */
export type BeforeApproval = { outcome: 'cannot_run' | 'unknown' | 'note'; why: string; checkedAt: string };

/** Timestamps are ISO 8601 text (see db/index.ts). */
/** Outside text a turn had read before it asked for something: an alert's body, an http_get page. */
export type OutsideRead = { source: 'alert' | 'http_get'; name: string };

/**
 * Who caused a request: the credential of the input that started the agent's turn (an operator's
 * browser session, an API token, an MCP client, an alert hook, a schedule), and the outside text
 * that turn had read (executions/cause.ts). The card and the notice say so.
 */
export type RequestCause = {
	kind: 'session' | 'token' | 'mcp' | 'alert' | 'schedule';
	operatorId?: string | null;
	operator?: string | null;
	tokenId?: string | null;
	tokenName?: string | null;
	/** The alert hook or schedule (kind alert, schedule). */
	watchId?: string | null;
	watchName?: string | null;
	read?: OutsideRead[];
};

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
	/** While it waits for approval: when the alert its session investigates resolved (the card asks whether it is still needed). */
	alertResolvedAt: string | null;
	/** Times a live worker took it over after the process running it stopped (a repeatable action), and why the last time. */
	resumes: number;
	resumedBecause: string | null;
	/** Set when the request could not run as asked, or could not be checked, before approval. */
	beforeApproval: BeforeApproval | null;
	decision: { decision: string; route: string; reason: string | null; decidedBy: string | null; decidedAt: string } | null;
	/** Who caused it (null: asked before causes were kept, or by an operator's Retry). */
	cause: RequestCause | null;
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
	/** Set when its host could not be asked before approval (a step it said cannot run refuses the plan). */
	beforeApproval?: BeforeApproval;
};

/** How an approved plan's run ended; `approved` means it is still running. */
export const PLAN_ENDS = ['succeeded', 'failed', 'cancelled', 'interrupted'] as const;
export type PlanEnd = (typeof PLAN_ENDS)[number];

export type PlanRow = {
	id: string;
	sessionId: string;
	title: string;
	steps: PlanStep[];
	status: 'proposed' | 'approved' | 'denied' | 'superseded' | 'expired' | PlanEnd;
	createdAt: string;
	decidedAt: string | null;
	decidedBy: string | null;
	/** While proposed: approving it is refused from then on; once approved: its steps start only until then. */
	expiresAt: string | null;
	finishedAt: string | null;
	error: string | null;
	cancelRequestedAt: string | null;
	/** While proposed: when the alert its session investigates resolved (the card asks whether it is still needed). */
	alertResolvedAt: string | null;
	/** Who caused it (see RequestCause). */
	cause: RequestCause | null;
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

const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1).trimEnd()} …` : s);

/**
 * What a card and a notice say when the request was made in a turn that had read outside text
 * (an alert's body, an http_get page): "asked after reading alert 'backup failed …'"; null when
 * the turn read none. Outside text may carry instructions: the operator should know it was there.
 */
export function outsideTextLabel(cause: { read?: Array<{ source: 'alert' | 'http_get'; name: string }> } | null | undefined): string | null {
	const read = cause?.read ?? [];
	if (!read.length) return null;
	const names = read.slice(0, 2).map((r) => (r.source === 'alert' ? `alert '${short(r.name, 40)}'` : `web page ${short(r.name, 60)}`));
	const more = read.length > 2 ? ` and ${read.length - 2} more` : '';
	return `asked after reading ${names.join(' and ')}${more}`;
}
