// The session review's SQL: the CTE chain both reviews start with (reviewCtes), the one-session
// statement and the overview's. server/review/ turns what they return into sentences and pages.

import type { Sql as PoolSql } from '../index';
import type { sessionFacts } from '../schema';
import {
	capMessage,
	commaList,
	errText,
	FACTS_VERSION,
	messageFactsSelect,
	messageVerdictsSelect,
	sessionFactsSelect,
	storedMessageFacts,
	storedFactsVersion,
	storedSessionFacts,
	TBIT,
	type Fragment,
	type Sql
} from './review-facts';
import {
	CANNOT_RE,
	CLI_WORDS_RE,
	N_PLUS_ONE_HIGH,
	N_PLUS_ONE_MIN,
	NUDGES_MEDIUM,
	PENDING_APPROVAL_HOURS,
	SEVERITY_WEIGHT,
	TEXT_NAME_RES,
	TOOL_CAP_RE,
	TOOL_NAME_RE,
	TOOL_NAMES,
	findingKinds,
	type FindingKind,
	type Severity
} from '../review-rules';

/** Second words that end a command name rather than continue it ("run commands directly"). */
const STOP_WORDS_RE = String.raw`^(for|on|in|as|at|to|here|there|that|this|it|them|yourself|myself|directly|without|because|since|from|with|now|anymore|the|a|an|any)$`;

/** The sentence around a "cannot" phrase. */
const EXCERPT_RE = String.raw`[^.!?\n]*(?:` + CANNOT_RE + String.raw`)[^.!?\n]*`;

/** The finding kinds a session is ranked by, each with its `sev_<kind>` column in r_scored (goal_outcome is `reached`). */
export const RANKED_KINDS = findingKinds.filter((k) => k !== 'goal_outcome');

/** The kinds of a r_scored row's findings, in RANKED_KINDS order. */
export function kindsOf(sql: Sql): Fragment {
	return sql`array_remove(array[${commaList(
		sql,
		RANKED_KINDS.map((k) => sql`case when ${sql(`sev_${k}`)} is not null then ${k}::text end`)
	)}], null)`;
}

/**
 * The CTE chain every review query starts with, over the chat sessions `where` selects (a
 * condition on `chat_sessions c`; null: all). Everything is computed in Postgres:
 *
 * - r_m, r_mf, r_sf0: each message's facts, its verdicts and their sums per session (see
 *   db/queries/review-facts.ts). With `source: 'facts'` (while the stored facts are of this
 *   code's version) r_m is read from `message_facts` and, for the overview, r_sf0 from
 *   `session_facts`; else they are computed by ONE pass over the messages' parts, with the
 *   expressions that computed those stored facts.
 * - r_exs executions; r_silent failed executions no later assistant message talks about;
 *   r_qs questions (the overview from the stored facts reads these sums from `session_activity`,
 *   kept by triggers); r_caps (one session) "cannot" messages with no success after them; r_sf1
 *   all of it per session; r_sf the severity of each finding; r_scored the weighted score and
 *   the kinds.
 *
 * `detail` (one session) adds message positions, evidence arrays, summaries, top tools and
 * the missing capability's name (read from the parts of the few messages that need it).
 */
export function reviewCtes(
	sql: Sql,
	where: Fragment | null,
	opts: { detail?: boolean; source?: 'parts' | 'facts'; pushDown?: boolean; factsWhere?: Fragment } = {}
): Fragment {
	const detail = opts.detail ?? false;
	const fromFacts = opts.source === 'facts';
	// The overview from the stored facts: `factsWhere` is `where` said over `session_facts f` (which
	// keeps each session's created_at and whether it is a replay), so no row joins chat_sessions,
	// and what its executions and questions say is read from `session_activity` (r_exs, r_qs,
	// r_silent and cap_count as the triggers of drizzle/0023 keep them), not computed.
	const ownRows = fromFacts && !detail && opts.factsWhere !== undefined;
	const w = SEVERITY_WEIGHT;
	const sessions = where ?? sql`true`;
	// `pushDown` (default): the facts', executions' and questions' rows are filtered by `where` too.
	// Worth it when `where` selects a few sessions; when it selects nearly all (the overview's
	// `replay is null`), r_sf1's join with r_sess filters alone, without four semi-joins over chat_sessions.
	const inSessions = (col: Fragment) => (where && opts.pushDown !== false ? sql`${col} in (select c.id from chat_sessions c where ${where})` : null);
	// The executions of these sessions (`executions e`), and when one ended.
	const ofSessions = inSessions(sql`e.requested_by_session`) ?? sql`e.requested_by_session is not null`;
	const qsIn = inSessions(sql`q.session_id`);
	const doneAt = sql`coalesce(e.finished_at, e.created_at)`;
	// A "cannot" or unknown-action message only counts when no execution succeeded after it.
	const noSuccessSince = (at: Fragment) => sql`(x.last_success_at is null or x.last_success_at <= ${at})`;
	// A failed execution is not silent when an assistant message after it says 'fail' or 'error'.
	const mentionedSince = (mentionAt: Fragment, at: Fragment) => sql`coalesce(${mentionAt} > ${at}, false)`;

	return sql`
	${ownRows ? sql`` : sql`r_sess as (select c.id, c.created_at from chat_sessions c where ${sessions}),`}
	${
		ownRows
			? sql`r_sf0 as not materialized (${storedSessionFacts(sql, opts.factsWhere!, { session: true })}),`
			: fromFacts && !detail
				? sql`r_m as (${storedMessageFacts(sql, inSessions(sql`f.session_id`))}),
	r_sf0 as not materialized (${storedSessionFacts(sql, inSessions(sql`f.session_id`))}),`
				: sql`r_m as materialized (${
						fromFacts ? storedMessageFacts(sql, inSessions(sql`f.session_id`), { detail }) : messageFactsSelect(sql, inSessions(sql`m.session_id`), { detail })
					}),
	r_mf as not materialized (${messageVerdictsSelect(sql, { detail })}),
	r_sf0 as (${sessionFactsSelect(sql, { detail })}),`
	}
	${
		ownRows
			? sql`
	r_sf1 as (
		-- kept by triggers as executions, questions and session_facts change (session_activity)
		select f.*, coalesce(a.exec_succeeded, 0) as exec_succeeded,
			coalesce(a.pending_since < now() - make_interval(hours => ${PENDING_APPROVAL_HOURS}), false)::int as pending_long,
			coalesce(a.questions_open, 0) as questions_open, coalesce(a.silent_failed, 0) as silent_failed,
			coalesce(a.cap_count, cardinality(f.cap_at)) as cap_count
		from r_sf0 f left join session_activity a on a.session_id = f.sid
	),`
			: sql`
	r_exs as (
		-- the overview needs only what decides a finding: successes (and the last), stale approvals
		select e.requested_by_session as sid,
			count(*) filter (where e.status = 'succeeded')::int as succeeded,
			count(*) filter (where e.status = 'awaiting_approval'
				and e.created_at < now() - make_interval(hours => ${PENDING_APPROVAL_HOURS}))::int as pending_long,
			max(${doneAt}) filter (where e.status = 'succeeded') as last_success_at
			${
				detail
					? sql`, count(*)::int as requested,
			count(*) filter (where e.approved_at is not null)::int as approved,
			count(*) filter (where e.status = 'failed')::int as failed,
			count(*) filter (where e.status = 'denied')::int as denied,
			count(*) filter (where e.status = 'expired')::int as expired`
					: sql``
			}
		from executions e where ${ofSessions} ${detail ? sql`` : sql`and e.status in ('succeeded', 'awaiting_approval')`}
		group by e.requested_by_session
	),
	r_silent as (
		-- failed executions that no later assistant message talks about: none names the id's
		-- first 8 characters (here), none says 'fail' or 'error' (mention_at, see silentFailed)
		select e.requested_by_session as sid
			${
				detail
					? sql`, count(*)::int as n, json_agg(json_build_object('id', e.id, 'action', e.action, 'target', e.target, 'error', left(e.error, 200),
				'next_idx', (select min(n.idx) from r_mf n where n.sid = e.requested_by_session and n.role = 'assistant' and n.created_at > ${doneAt})
			) order by ${doneAt}) as list`
					: sql`, array_agg(${doneAt}) as done_at`
			}
		from executions e
		${detail ? sql`left join r_sf0 f on f.sid = e.requested_by_session` : sql``}
		where e.status = 'failed' and ${ofSessions}
			${detail ? sql`and not ${mentionedSince(sql`f.mention_at`, doneAt)}` : sql``}
			and not exists (select 1 from r_m m
				where m.sid = e.requested_by_session and m.hex_runs is not null and m.role = 'assistant' and m.created_at > ${doneAt}
					and strpos(m.hex_runs, left(e.id::text, 8)) > 0)
		group by e.requested_by_session
	),
	r_qs as (
		select q.session_id as sid, count(*)::int as asked,
			count(*) filter (where q.status = 'answered')::int as answered,
			count(*) filter (where q.status = 'open')::int as open
			${detail ? sql`, json_agg(q.prompt order by q.created_at) filter (where q.status = 'open') as open_prompts` : sql``}
		from session_questions q ${qsIn ? sql`where ${qsIn}` : sql``} group by q.session_id
	),
	${
		detail
			? sql`r_cap as (
		-- the few "cannot" messages are read again for the missing name
		select m.sid, m.says_cannot, m.cap_errs, m.idx, t.cannot_text, t.cap_example, coalesce(t.cap_name, (
				select case
					when c[1] ~* ${CLI_WORDS_RE} and c[2] is not null and c[2] !~* ${STOP_WORDS_RE} then lower(c[1] || '_' || c[2])
					when c[1] ~ '_' then lower(c[1])
				end
				from (select coalesce(regexp_match(t.cannot_text, ${TEXT_NAME_RES[0]}, 'i'), regexp_match(t.cannot_text, ${TEXT_NAME_RES[1]}, 'i'),
					regexp_match(t.cannot_text, ${TEXT_NAME_RES[2]}, 'i')) as c) n)) as nm
		from r_mf m
		left join r_exs x on x.sid = m.sid
		cross join lateral (
			select case when m.says_cannot then string_agg(q.text, chr(10)) filter (where q.type = 'text') end as cannot_text,
				min((regexp_match(${errText(sql, sql`q`)}, ${TOOL_NAME_RE}, 'i'))[1]) filter (where ${errText(sql, sql`q`)} ~* ${TOOL_CAP_RE}) as cap_name,
				min(left(${errText(sql, sql`q`)}, 200)) filter (where ${errText(sql, sql`q`)} ~* ${TOOL_CAP_RE}) as cap_example
			from messages mm cross join lateral jsonb_to_recordset(mm.parts) as q(type text, "errorText" text, output jsonb, text text)
			where mm.id = m.id
		) t
		where ${capMessage(sql)} and ${noSuccessSince(sql`m.created_at`)}
	),
	r_caps as (
		select sid, count(*)::int as n, array_agg(idx order by idx) as cap_idx,
			coalesce(array_agg(distinct nm) filter (where nm is not null), '{}') as cap_names,
			json_agg(json_build_object('idx', idx, 'name', nm, 'says_cannot', says_cannot,
				'excerpt', left(regexp_substr(cannot_text, ${EXCERPT_RE}, 1, 1, 'i'), 240),
				'cap_errs', cap_errs, 'cap_example', cap_example) order by idx) as cap_detail
		from r_cap group by sid
	),`
			: sql``
	}
	r_sf1 as (
		select f.*, s.created_at,
			coalesce(x.succeeded, 0) as exec_succeeded, coalesce(x.pending_long, 0) as pending_long, coalesce(q.open, 0) as questions_open,
			${
				detail
					? sql`coalesce(x.requested, 0) as exec_requested, coalesce(x.approved, 0) as exec_approved,
			coalesce(x.failed, 0) as exec_failed, coalesce(x.denied, 0) as exec_denied, coalesce(x.expired, 0) as exec_expired,
			coalesce(q.asked, 0) as questions_asked, coalesce(q.answered, 0) as questions_answered,
			q.open_prompts, coalesce(c.cap_idx, '{}') as cap_idx, coalesce(c.cap_names, '{}') as cap_names, c.cap_detail, si.list as silent_list,
			coalesce(si.n, 0) as silent_failed, coalesce(c.n, 0) as cap_count`
					: sql`
			-- per session, over the few failed executions and "cannot" messages it has
			case when si.sid is not null then (select count(*) from unnest(si.done_at) d(at) where not ${mentionedSince(sql`f.mention_at`, sql`d.at`)}) else 0 end::int as silent_failed,
			case when cardinality(f.cap_at) > 0 then (select count(*) from unnest(f.cap_at) t(at) where ${noSuccessSince(sql`t.at`)}) else 0 end::int as cap_count`
			}
		from r_sf0 f
		join r_sess s on s.id = f.sid
		left join r_exs x on x.sid = f.sid
		left join r_qs q on q.sid = f.sid
		left join r_silent si on si.sid = f.sid
		${detail ? sql`left join r_caps c on c.sid = f.sid` : sql``}
	),`
	}
	r_sf as (
		select f.*,
			case when f.cap_count > 0 then 'high' end as sev_missing_capability,
			case when f.n1_max >= ${N_PLUS_ONE_HIGH} then 'high' when f.n1_max >= ${N_PLUS_ONE_MIN} then 'medium' end as sev_n_plus_one,
			case when f.nudges >= ${NUDGES_MEDIUM} then 'medium' when f.nudges > 0 then 'low' end as sev_operator_as_event_loop,
			case when f.silent_failed > 0 or f.blanks > 0 or f.retried > 0 then 'medium' end as sev_silent_failure,
			case when f.questions_open > 0 or f.pending_long > 0 then 'medium'
				when f.notext > 0 then 'low' end as sev_stall,
			(f.exec_succeeded > 0 and f.last_ok and f.cap_count = 0) as reached
		from r_sf1 f
	),
	r_scored as (
		select r_sf.*,
			(case sev_missing_capability when 'high' then ${w.high} else 0 end)
			+ (case sev_n_plus_one when 'high' then ${w.high} when 'medium' then ${w.medium} else 0 end)
			+ (case sev_operator_as_event_loop when 'medium' then ${w.medium} when 'low' then ${w.low} else 0 end)
			+ (case sev_silent_failure when 'medium' then ${w.medium} else 0 end)
			+ (case sev_stall when 'medium' then ${w.medium} when 'low' then ${w.low} else 0 end)
			+ (case when reached then 0 else ${w.low} end) as score,
			${kindsOf(sql)} as kinds
		from r_sf
	)`;
}

/** One session's facts as r_scored computes them (detail mode). */
export interface ReviewFactsRow {
	messages: number;
	user_messages: number;
	assistant_messages: number;
	system_messages: number;
	tool_calls: number;
	first_at: string | null;
	last_at: string | null;
	n1_max: number | null;
	/** Operator messages that only nudged the agent on ("continue"). */
	nudges: number;
	/** The last assistant message reports success. */
	last_ok: boolean;
	n1_idx: number[];
	nudge_idx: number[];
	blank_idx: number[];
	retry_idx: number[];
	notext_idx: number[];
	exec_requested: number;
	exec_approved: number;
	exec_succeeded: number;
	exec_failed: number;
	exec_denied: number;
	exec_expired: number;
	pending_long: number;
	questions_asked: number;
	questions_answered: number;
	questions_open: number;
	silent_failed: number;
	silent_list: { id: string; action: string; target: string; error: string | null; next_idx: number | null }[] | null;
	cap_idx: number[];
	cap_names: string[];
	cap_detail: { idx: number; name: string | null; says_cannot: boolean; excerpt: string | null; cap_errs: number; cap_example: string | null }[] | null;
	open_prompts: string[] | null;
	sev_missing_capability: Severity | null;
	sev_n_plus_one: Severity | null;
	sev_operator_as_event_loop: Severity | null;
	sev_silent_failure: Severity | null;
	sev_stall: Severity | null;
	reached: boolean;
	score: number;
	input_tokens: number;
	output_tokens: number;
	cached_tokens: number;
	/** Tokens per model (each turn's model: one model per turn), what its cost is priced from. */
	usage_by_model: UsageByModel;
}

/** One message of a reviewed session (r_mf, detail mode). */
export interface ReviewMessageRow {
	idx: number;
	id: string;
	role: 'user' | 'assistant' | 'system';
	origin: string;
	status: string;
	created_at: string;
	calls: number;
	top_tools: { tool: string; n: number }[] | null;
	summary: string;
	text: string;
	ent_max: number;
	ent_tool: string | null;
	lxc_refs: number;
	last_assistant: boolean;
	input_tokens: number;
	output_tokens: number;
	cached_tokens: number;
	/** It holds a hypotheses part (TBIT.hypotheses): its parts are read for them. */
	hypotheses: boolean;
}

/**
 * One session's review facts and messages, computed from the stored message facts while they
 * are of this code's version, else from the parts (`source` forces one). Null when no such
 * session; `facts` is null when it has no messages.
 */
export async function sessionReviewFacts(
	sql: PoolSql,
	sessionId: string,
	opts: { source?: 'facts' | 'parts' } = {}
): Promise<{
	session: { id: string; title: string; createdAt: string; owner: string | null };
	facts: ReviewFactsRow | null;
	messages: ReviewMessageRow[];
} | null> {
	const [[session], version] = await Promise.all([
		// `owner`: whose session it is (access/sessions.ts); the admin reads it here, read-only.
		sql<{ id: string; title: string; createdAt: string; owner: string | null }[]>`
			select c.id, c.title, to_char(c.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as "createdAt", o.username as owner
			from chat_sessions c left join operators o on o.id = c.operator_id where c.id = ${sessionId}`,
		opts.source ? null : storedFactsVersion(sql)
	]);
	if (!session) return null;
	const source = opts.source ?? (version === FACTS_VERSION ? 'facts' : 'parts');

	const [row] = await sql<{ facts: ReviewFactsRow | null; messages: ReviewMessageRow[] | null }[]>`
		with ${reviewCtes(sql, sql`c.id = ${sessionId}`, { detail: true, source })}
		select
			(select row_to_json(r) from r_scored r) as facts,
			(select json_agg(json_build_object(
				'idx', m.idx, 'id', m.id, 'role', m.role, 'origin', m.origin, 'status', m.status,
				'created_at', to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'calls', m.calls,
				'top_tools', (select json_agg(json_build_object('tool', t.tool, 'n', t.n) order by t.n desc, t.tool) from (
					select tool, n from unnest(string_to_array(${TOOL_NAMES.join(',')}::text, ','), m.tool_counts) k(tool, n) where n > 0
					union all
					select tool, count(*)::int from string_to_table(m.other_tools, ' ') tool group by tool) t),
				'summary', m.summary, 'text', case when m.last_assistant then m.text else '' end,
				'ent_max', m.ent_max, 'ent_tool', m.ent_tool, 'lxc_refs', m.lxc_refs, 'last_assistant', m.last_assistant,
				'input_tokens', m.input_tokens, 'output_tokens', m.output_tokens, 'cached_tokens', m.cached_tokens, 'hypotheses', m.hypotheses
			) order by m.idx) from r_mf m) as messages`;
	return { session, facts: row.facts, messages: row.messages ?? [] };
}

/** Sessions in the overview's tokens chart (the most tokens first). */
const TOKEN_SESSIONS = 20;

/** `{ model: [input, output, cached] }` (session_facts.usage_by_model). */
export type UsageByModel = (typeof sessionFacts.$inferSelect)['usageByModel'];

/** What the overview's one statement returns. */
export interface OverviewFactsRow {
	session_count: number;
	reached_count: number;
	tool_call_count: number;
	input_tokens: number;
	output_tokens: number;
	cached_tokens: number;
	sessions: {
		id: string;
		title: string;
		created_at: string;
		messages: number;
		tool_calls: number;
		score: number;
		kinds: FindingKind[];
		sevs: (Severity | null)[];
		reached: boolean;
		input_tokens: number;
		output_tokens: number;
		cached_tokens: number;
		usage_by_model: UsageByModel;
	}[];
	/** Tokens per model over every session in the filter. */
	by_model: UsageByModel;
	kinds: { kind: FindingKind; sessions: number }[];
	by_tokens: { id: string; title: string; input: number; output: number; cached: number }[];
	/** Calls per TOOL_NAMES entry, in that order. */
	tool_counts: number[];
	/** Failed calls per TOOL_NAMES entry, then of other names. */
	fail_counts: number[];
	/** Sessions in the date range by what started them (the outcome filter does not apply). */
	origin_counts: { operator: number; alert: number; schedule: number };
	/** Over the alert investigations in the date range: how many got findings and an approved fix, and the medians (s). */
	alert_times: { withFindings: number; findingsMedianS: number | null; withFix: number; fixMedianS: number | null };
}

/**
 * Every session created in [from, to] (UTC days, either may be null) with this outcome reviewed
 * at once, in one statement: totals, finding kinds, calls and failures per tool, and the first
 * `limit` sessions ranked by score. Reads the stored message facts while they are of this code's
 * version, else every message's parts (`source` forces one); returns which it read.
 */
export async function overviewFacts(
	sql: PoolSql,
	q: { from: string | null; to: string | null; outcome: 'reached' | 'not_reached' | null; limit: number; source?: 'facts' | 'parts' }
): Promise<{ source: 'facts' | 'parts'; facts: OverviewFactsRow }> {
	const { from, to, outcome, limit } = q;
	// One statement. Over every message's parts (while the facts are rebuilt), give it room to
	// sort and hash in memory, and let the parallel workers scan while this backend only merges.
	return sql.begin(async (tx) => {
		const source = q.source ?? ((await storedFactsVersion(tx)) === FACTS_VERSION ? 'facts' : 'parts');
		if (source === 'parts') await tx`set local work_mem = '64MB'; set local parallel_leader_participation = off`.simple();
		// Sessions created in [from, to], replays left out (a replay re-ran another session: counted
		// there, not again, replay/run.ts): over chat_sessions, and over the stored facts, which keep
		// each session's created_at and replay flag.
		const inRange = (notReplay: Fragment, createdAt: Fragment) =>
			from || to
				? tx`${notReplay} and (${from}::date is null or ${createdAt} >= (${from}::date)::timestamp at time zone 'UTC')
					and (${to}::date is null or ${createdAt} < ((${to}::date) + 1)::timestamp at time zone 'UTC')`
				: notReplay;
		const where = inRange(tx`c.replay is null`, tx`c.created_at`);
		const factsWhere = inRange(tx`not f.replay`, tx`f.session_created_at`);

		const sums = (col: string, n: number) =>
			commaList(
				tx,
				Array.from({ length: n }, (_, i) => tx`coalesce(sum(${tx(col)}[${i + 1}]), 0)::int`)
			);
		const sevs = commaList(
			tx,
			RANKED_KINDS.map((k) => tx`${tx(`sev_${k}`)}`)
		);
		const kindCounts = commaList(
			tx,
			RANKED_KINDS.map((k) => tx`count(*) filter (where ${tx(`sev_${k}`)} is not null)::int`)
		);
		// Totals, finding kinds, calls and failures per tool in one pass over r_in; then the ranked page.
		const [facts] = await tx<OverviewFactsRow[]>`
		with ${reviewCtes(tx, where, { source, pushDown: Boolean(from || to), factsWhere: source === 'facts' ? factsWhere : undefined })},
		r_alerts as (
			-- alert investigations: from the alert (the session's creation) to the findings (the first
			-- complete agent reply with text) and to an approved fix (its first plan or execution an
			-- operator approved)
			select
				extract(epoch from (
					select min(m.updated_at) from messages m
					where m.session_id = c.id and m.role = 'assistant' and m.status = 'complete' and ${
						source === 'facts'
							? tx`exists (select 1 from message_facts f where f.message_id = m.id and f.tbits & ${TBIT.text} <> 0)`
							: tx`exists (select 1 from jsonb_array_elements(m.parts) p where p->>'type' = 'text' and btrim(p->>'text') <> '')`
					}
				) - c.created_at)::float8 as findings_s,
				extract(epoch from least(
					(select min(p.decided_at) from plans p where p.session_id = c.id and p.decided_at is not null and p.status not in ('denied', 'proposed')),
					(select min(ap.decided_at) from approvals ap join executions e on e.id = ap.execution_id where e.requested_by_session = c.id and ap.decision = 'approved')
				) - c.created_at)::float8 as fix_s
			from chat_sessions c where c.started_by_hook is not null and ${where ?? tx`true`}
		),
		r_in as (
			select sid, created_at, messages, tool_calls, score, reached, tool_counts, fail_counts, input_tokens, output_tokens, cached_tokens, usage_by_model, model, ${sevs}
			from r_scored
			where ${outcome}::text is null or reached = (${outcome}::text = 'reached')
		),
		r_tot as (
			select count(*)::int as session_count, count(*) filter (where reached)::int as reached_count,
				coalesce(sum(tool_calls), 0)::int as tool_call_count, coalesce(sum(input_tokens), 0)::float8 as input_tokens,
				coalesce(sum(output_tokens), 0)::float8 as output_tokens, coalesce(sum(cached_tokens), 0)::float8 as cached_tokens,
				array[${kindCounts}] as kind_counts, json_build_array(${sums('tool_counts', TOOL_NAMES.length)}) as tool_counts,
				json_build_array(${sums('fail_counts', TOOL_NAMES.length + 1)}) as fail_counts
			from r_in
		)
		select t.session_count, t.reached_count, t.tool_call_count, t.tool_counts, t.fail_counts, t.input_tokens, t.output_tokens, t.cached_tokens,
			(select coalesce(json_agg(x), '[]') from (
				select sid as id, title, created_at, messages, tool_calls, score, ${kindsOf(tx)} as kinds, reached, array[${sevs}] as sevs,
					input_tokens::float8 as input_tokens, output_tokens::float8 as output_tokens, cached_tokens::float8 as cached_tokens, usage_by_model
				-- the page's columns (and titles) are read for its rows only, not for every row the sort reads
				from (select r.*, c.title from (select * from r_in order by score desc, tool_calls desc, created_at desc limit ${limit}) r
					join chat_sessions c on c.id = r.sid) r_in
				order by score desc, tool_calls desc, created_at desc
			) x) as sessions,
			(select coalesce(json_agg(json_build_object('kind', k, 'sessions', n) order by n desc, k), '[]')
				from unnest(string_to_array(${RANKED_KINDS.join(',')}::text, ','), t.kind_counts) as y(k, n) where n > 0) as kinds,
			(select coalesce(json_agg(x), '[]') from (
				select sid as id, title, input_tokens::float8 as input, output_tokens::float8 as output, cached_tokens::float8 as cached
				from (select r.*, c.title from (select * from r_in where input_tokens + output_tokens > 0
					order by input_tokens + output_tokens desc, created_at desc limit ${TOKEN_SESSIONS}) r join chat_sessions c on c.id = r.sid) r_in
				order by input_tokens + output_tokens desc, created_at desc
			) x) as by_tokens,
			(select coalesce(jsonb_object_agg(k, jsonb_build_array(i, o, c)), '{}') from (
				-- summed as numeric (jsonb's own; whole token counts, so the float8 at the end is the same);
				-- a session whose tokens all went to one model (nearly all) is summed from its columns
				select k, sum(i)::float8 as i, sum(o)::float8 as o, sum(c)::float8 as c from (
					select model as k, sum(input_tokens)::numeric as i, sum(output_tokens)::numeric as o, sum(cached_tokens)::numeric as c
					from r_in where model is not null group by model
					union all
					select k, sum((v -> 0)::numeric), sum((v -> 1)::numeric), sum((v -> 2)::numeric)
					from r_in, jsonb_each(r_in.usage_by_model) e(k, v) where r_in.model is null group by k
				) u group by k
			) y) as by_model,
			-- sessions by what started them, over the date range (not the outcome), and the alerts' medians
			(select json_build_object('operator', count(*) filter (where c.started_by_hook is null and c.started_by_schedule is null),
				'alert', count(*) filter (where c.started_by_hook is not null), 'schedule', count(*) filter (where c.started_by_schedule is not null))
				from chat_sessions c where ${where ?? tx`true`}) as origin_counts,
			(select json_build_object('withFindings', count(findings_s), 'findingsMedianS', percentile_cont(0.5) within group (order by findings_s),
				'withFix', count(fix_s), 'fixMedianS', percentile_cont(0.5) within group (order by fix_s))
				from r_alerts) as alert_times
		from r_tot t`;
		return { source, facts };
	});
}

/** The session's failed executions as every view tells them apart (execution-status.ts: failed or not run). */
export async function listFailedExecutions(
	sql: PoolSql,
	sessionId: string
): Promise<{ id: string; status: string; error: string | null; steps: { kind?: string }[] }[]> {
	return sql<
		{ id: string; status: string; error: string | null; steps: { kind?: string }[] }[]
	>`select id, status, error, steps from executions where requested_by_session = ${sessionId} and status = 'failed'`;
}
