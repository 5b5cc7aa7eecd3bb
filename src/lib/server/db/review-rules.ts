/**
 * The rules behind a session review, in one place: the Postgres regular expressions (ARE
 * syntax, passed as bind parameters, always matched case-insensitively), thresholds and
 * weights. Both the one-session review and the cross-session overview use these, so a
 * session ranked for a finding shows the same finding on its own page. They sit in db/ because
 * they are SQL (queries/review-facts.ts matches with them) and db/ imports nothing above it.
 */

export const severities = ['high', 'medium', 'low'] as const;
export type Severity = (typeof severities)[number];

export const findingKinds = ['missing_capability', 'silent_failure', 'n_plus_one', 'operator_as_event_loop', 'stall', 'goal_outcome'] as const;
export type FindingKind = (typeof findingKinds)[number];

/** Ranking weight of a finding by severity (goal_outcome counts only when the goal was missed). */
export const SEVERITY_WEIGHT: Record<Severity, number> = { high: 3, medium: 2, low: 1 };

/** An assistant message saying it cannot do something. */
export const CANNOT_RE = [
	String.raw`\m(i|we) (can['’]?t|cannot|can not|am unable to|am not able to|are unable to) (run|do|create|execute|perform|use|deploy|install|start)\M`,
	String.raw`\mcannot (run|do|create|execute|perform)\M`,
	String.raw`\mnot supported\M`,
	String.raw`\mno [[:alnum:]_-]+( [[:alnum:]_-]+){0,3} action\M`,
	String.raw`\monly (pct_exec|systemctl|restart|apt_upgrade)\M`
].join('|');

/** A tool result or error saying the action or tool does not exist. */
export const TOOL_CAP_RE = String.raw`unknown (action|tool)|not supported|no such (action|tool)`;

/** The missing name in a tool error ("unknown action 'pct_create'"). */
export const TOOL_NAME_RE = String.raw`unknown (?:action|tool) ['"‘’]?([[:alnum:]_.-]+)`;

/** The missing command in an assistant's words ("I can't run pct create", "no pct_create action"). */
export const TEXT_NAME_RES = [
	String.raw`(?:can['’]?t|cannot|can not|unable to) (?:run|do|create|execute|perform|use) ([[:alnum:]_-]+)(?: ([[:alnum:]_-]+))?`,
	String.raw`\mno ([[:alnum:]_-]+) action`,
	String.raw`\m([[:alnum:]_]+) (?:is|are) not supported`
];

/** First words that make "X Y" one command ("pct create" → pct_create). */
export const CLI_WORDS_RE = String.raw`^(pct|qm|pvesm|pveam|pvesh|apt|apt-get|docker|git|zfs|vzdump|systemctl|lxc)$`;

/** An operator message that only nudges the agent on (trimmed, whole message). */
export const NUDGE_RE = String.raw`^(continue|proceed|go on|go ahead|carry on|keep going|next|and\??|status\??|\?+|ok,? continue|please continue|(just )?(do|run) (it|them|all|everything|all of it)( yourself)?)[[:space:].!]*$`;

/** The last assistant message reports success … */
export const SUCCESS_RE = String.raw`\m(done|success|successful|successfully|succeeded|complete|completed|deployed|installed|created|finished|all set|is (now )?(up|running|live|reachable))\M`;
/** … and does not report a failure. */
export const FAILURE_RE = String.raw`\m(failed|failure|unable|could not|couldn['’]?t|not reached)\M`;

/**
 * Cheap LIKE patterns (on the lower-cased text) that any match of the regex above contains:
 * Postgres regexes cost microseconds per text, so they only run on texts passing these.
 */
export const CANNOT_LIKE = ['%can%t %', '%cannot%', '%can not%', '%unable%', '%not able%', '%not supported%', '%action%', '%only %'];
export const SUCCESS_LIKE = [
	'%done%',
	'%succe%',
	'%complete%',
	'%deployed%',
	'%installed%',
	'%created%',
	'%finished%',
	'%all set%',
	'%is up%',
	'%is now %',
	'%is running%',
	'%is live%',
	'%is reachable%'
];
export const FAILURE_LIKE = ['%fail%', '%unable%', '%could%', '%not reached%'];
/** A later assistant message that talks about a failure (plain substrings). */
export const MENTIONS_FAILURE_LIKE = ['%fail%', '%error%'];
/** Nudges are short; longer operator messages are not tested against NUDGE_RE. */
export const NUDGE_MAX_CHARS = 40;

/**
 * The agent's tools (src/lib/server/agent/tools/index.ts). The cross-session histogram counts
 * these one by one; a call to any other name is counted as "other".
 */
export const TOOL_NAMES = [
	'list_entities',
	'get_entity',
	'list_lxcs',
	'get_lxc_state',
	'get_state_snapshot',
	'search_knowledge',
	'http_get',
	'request_execution',
	'propose_plan',
	'get_execution_status',
	'ask_operator'
] as const;
export const OTHER_TOOL = 'other';

/** Per-entity tools and the bulk tools that answer the same question in one call. */
export const PER_ENTITY_TOOLS = ['get_entity', 'get_lxc_state'] as const;
export const BULK_ALTERNATIVE: Record<string, string> = {
	get_entity: 'list_entities / get_state_snapshot',
	get_lxc_state: 'list_lxcs / get_state_snapshot'
};
/** get_entity over containers is better answered by list_lxcs. */
export const BULK_ALTERNATIVE_LXC = 'list_lxcs / get_state_snapshot';

/** n_plus_one: calls of one per-entity tool in one message. */
/**
 * The part types that hold hypotheses (present_hypotheses and mark_hypothesis calls, an operator's
 * pursue; see lib/messages/hypotheses.ts): the one-session review reads the parts of the messages
 * holding one (TBIT.hypotheses), not of every message.
 */
export const HYPOTHESIS_PART_TYPES = ['tool-present_hypotheses', 'tool-mark_hypothesis', 'data-pursue'];

export const N_PLUS_ONE_MIN = 5;
export const N_PLUS_ONE_HIGH = 20;

/** operator_as_event_loop: nudges in a session (medium from this many, low below). */
export const NUDGES_MEDIUM = 2;

/** stall: an approval waiting longer than this. */
export const PENDING_APPROVAL_HOURS = 1;

export const severityRank = (s: Severity) => severities.indexOf(s);
export const kindRank = (k: FindingKind) => findingKinds.indexOf(k);

export function nPlusOneSeverity(maxCalls: number): Severity | null {
	if (maxCalls >= N_PLUS_ONE_HIGH) return 'high';
	if (maxCalls >= N_PLUS_ONE_MIN) return 'medium';
	return null;
}
