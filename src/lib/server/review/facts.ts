import type { PendingQuery, Row, TransactionSql } from 'postgres';
import type { Sql as PoolSql } from '../db/index';

/** The pool or a transaction on it. */
export type Sql = PoolSql | TransactionSql;
import {
	CANNOT_LIKE,
	CANNOT_RE,
	CLI_WORDS_RE,
	FAILURE_LIKE,
	FAILURE_RE,
	MENTIONS_FAILURE_LIKE,
	N_PLUS_ONE_HIGH,
	N_PLUS_ONE_MIN,
	NUDGE_MAX_CHARS,
	NUDGE_RE,
	NUDGES_MEDIUM,
	PENDING_APPROVAL_HOURS,
	SEVERITY_WEIGHT,
	SUCCESS_LIKE,
	SUCCESS_RE,
	TEXT_NAME_RES,
	TOOL_CAP_RE,
	TOOL_NAMES,
	TOOL_NAME_RE
} from './rules';

export type Fragment = PendingQuery<Row[]>;

/** Second words that end a command name rather than continue it ("run commands directly"). */
const STOP_WORDS_RE = String.raw`^(for|on|in|as|at|to|here|there|that|this|it|them|yourself|myself|directly|without|because|since|from|with|now|anymore|the|a|an|any)$`;

/** The sentence around a "cannot" phrase. */
const EXCERPT_RE = String.raw`[^.!?\n]*(?:` + CANNOT_RE + String.raw`)[^.!?\n]*`;

/**
 * r_m.tbits, over the message's non-blank text parts: 1 has text, 2 says it cannot (assistant),
 * 4 is not a nudge (user), 16 reports success, 32 reports failure (assistant).
 */

/** 1-based position of a tool in r_m.tool_counts. */
export const toolSlot = (name: (typeof TOOL_NAMES)[number]) => TOOL_NAMES.indexOf(name) + 1;

/** Fragments joined with commas. */
export function commaList(sql: Sql, frags: Fragment[]): Fragment {
	return frags.reduce((acc, f) => sql`${acc}, ${f}`);
}

/**
 * The CTE chain every review query starts with, over the chat sessions `where` selects (a
 * condition on `chat_sessions c`; null: all). Everything is computed in Postgres:
 *
 * - r_m: the ONE pass over every message's parts (jsonb_to_recordset, grouped by message id so
 *   it streams over the primary key and runs in parallel workers on a large table). Only
 *   cheap per-part aggregates: counts per known tool, failed tool names, and boolean verdicts
 *   on text parts, where a regex only runs on texts that pass a LIKE on its keywords.
 * - r_mf: per message (+ its position and whether it is the session's last assistant message,
 *   window functions, only for the one-session page); r_ex/r_exs executions; r_silent failed
 *   executions no later assistant message talks about; r_qs questions; r_sf0 counts per
 *   session; r_cap/r_caps "cannot" messages with no success after them; r_sf the severity of
 *   each finding; r_scored the weighted score and the kinds.
 *
 * `detail` (one session) adds message positions, evidence arrays, summaries, top tools and
 * the missing capability's name.
 */
export function reviewCtes(sql: Sql, where: Fragment | null, opts: { detail?: boolean } = {}): Fragment {
	const detail = opts.detail ?? false;
	const w = SEVERITY_WEIGHT;
	const sessions = where ?? sql`true`;
	// p: one part of a message (AI SDK UIMessage parts), its fields extracted once. A tool call is
	// a `tool-<name>` part; a Nomos note is a `data-note` part with { kind, text } in `data`.
	const isCall = (p: Fragment) => sql`${p}.type like 'tool-%'`;
	// The tool's name; '?' for a nameless `tool-` part.
	const toolName = (p: Fragment) => sql`coalesce(nullif(substr(${p}.type, 6), ''), '?')`;
	// A failed call's message: the SDK's errorText (output-error), else a result's { error } or a
	// text result (see callError in messages/parts.ts).
	const errText = (p: Fragment) =>
		sql`coalesce(${p}."errorText", ${p}.output ->> 'error', case when jsonb_typeof(${p}.output) = 'string' then ${p}.output #>> '{}' end)`;
	// A call failed: output-error, or a result object with an `error` key (as callError), or a
	// text result saying "error". (`?` alone would also match a string or an array element.)
	const failed = sql`(p.state = 'output-error'
		or (p.state = 'output-available' and ((p.output ? 'error' and jsonb_typeof(p.output) = 'object')
			or (jsonb_typeof(p.output) = 'string' and lower(p.output #>> '{}') like '%error%'))))`;
	// The list goes over as one string: array parameters depend on the client's type setup.
	const likeAny = (x: Fragment, patterns: string[]) => sql`lower(${x}) like any(string_to_array(${patterns.join('\n')}::text, chr(10)))`;
	const toolCounts = commaList(
		sql,
		TOOL_NAMES.map((n) => sql`count(*) filter (where p.type = ${'tool-' + n})`)
	);
	const ge = toolSlot('get_entity');
	const gl = toolSlot('get_lxc_state');
	// Message positions and evidence arrays only where a single session is shown.
	const idxArray = (cond: Fragment) => sql`coalesce(array_agg(m.idx order by m.idx) filter (where ${cond}), '{}')`;
	const fullText = sql`coalesce(string_agg(p.text, chr(10)) filter (where p.type = 'text'), '')`;

	const blankCond = sql`m.role = 'assistant' and (m.status = 'error' or (m.status = 'complete' and m.calls = 0 and m.blank))`;
	const notextCond = sql`m.role = 'assistant' and m.status = 'complete' and m.calls > 0 and m.blank`;
	const ent = sql`greatest(m.tool_counts[${ge}], m.tool_counts[${gl}])`;

	return sql`
	r_sess as (select c.id, c.title, c.created_at from chat_sessions c where ${sessions}),
	r_m as materialized (
		select m.id, m.session_id as sid, m.seq, m.role, m.status, m.origin, m.created_at,
			count(*) filter (where ${isCall(sql`p`)})::int as calls,
			array[${toolCounts}]::int[] as tool_counts,
			-- failed calls' tool names, space-separated; '!' marks "unknown action/tool" errors
			string_agg(${toolName(sql`p`)} || case when ${errText(sql`p`)} ~* ${TOOL_CAP_RE} then '!' else '' end, ' ')
				filter (where ${isCall(sql`p`)} and ${failed}) as failed_tools,
			count(*) filter (where p.type = 'data-note' and p.data ->> 'kind' = 'retry')::int as retries,
			-- what the text parts say, as bits (one aggregate instead of five; see above)
			coalesce(bit_or(case when p.type = 'text' and btrim(p.text) <> '' then 1
				| case when m.role = 'assistant' and ${likeAny(sql`p.text`, CANNOT_LIKE)} and p.text ~* ${CANNOT_RE} then 2 else 0 end
				| case when m.role = 'user' and not (length(btrim(p.text)) <= ${NUDGE_MAX_CHARS} and btrim(p.text) ~* ${NUDGE_RE}) then 4 else 0 end
				| case when m.role = 'assistant' and ${likeAny(sql`p.text`, SUCCESS_LIKE)} and p.text ~* ${SUCCESS_RE} then 16 else 0 end
				| case when m.role = 'assistant' and ${likeAny(sql`p.text`, FAILURE_LIKE)} and p.text ~* ${FAILURE_RE} then 32 else 0 end
				end), 0) as tbits
			${detail ? sql`,
			left(regexp_replace(coalesce(nullif(btrim(${fullText}), ''),
				string_agg(p.data ->> 'text', chr(10)) filter (where p.type = 'data-note'), ''), '[[:space:]]+', ' ', 'g'), 121) as summary,
			left(${fullText}, 400) as text,
			string_agg(nullif(substr(p.type, 6), ''), ' ') filter (where ${isCall(sql`p`)}) as tools,
			-- an invalid call keeps its arguments in rawInput (see callInput in messages/parts.ts)
			count(*) filter (where p.type = 'tool-get_entity' and coalesce(p.input, p."rawInput") ->> 'id' ~* '^lxc:')::int as lxc_refs` : sql``}
		from messages m
		left join lateral jsonb_to_recordset(m.parts)
			as p(type text, state text, "errorText" text, output jsonb, text text, data jsonb ${detail ? sql`, input jsonb, "rawInput" jsonb` : sql``}) on true
		${where ? sql`where m.session_id in (select c.id from chat_sessions c where ${where})` : sql``}
		group by m.id
	),
	r_mf as not materialized (
		select m.id, m.sid, m.seq, m.role, m.status, m.origin, m.created_at, m.calls, m.retries,
			m.tbits & 1 = 0 as blank,
			m.tbits & 2 <> 0 as says_cannot,
			(m.role = 'user' and m.tbits & 1 <> 0 and m.tbits & 4 = 0) as nudge,
			${ent}::int as ent_max,
			case when m.tool_counts[${ge}] >= m.tool_counts[${gl}] then 'get_entity' else 'get_lxc_state' end as ent_tool,
			coalesce(length(m.failed_tools) - length(replace(m.failed_tools, '!', '')), 0) as cap_errs,
			(m.tbits & 16 <> 0 and m.tbits & 32 = 0 and m.tbits & 2 = 0) as reports_success
			${detail ? sql`,
			(row_number() over (partition by m.sid order by m.seq) - 1)::int as idx,
			(m.role = 'assistant' and m.seq = max(m.seq) filter (where m.role = 'assistant') over (partition by m.sid)) as last_assistant,
			m.summary, m.text, m.lxc_refs, m.tools` : sql``}
		from r_m m
	),
	r_ex as (
		select e.requested_by_session as sid, e.id, e.action, e.target, e.status, e.error, e.created_at, e.approved_at,
			coalesce(e.finished_at, e.created_at) as done_at
		from executions e join r_sess s on s.id = e.requested_by_session
	),
	r_exs as (
		select sid, count(*)::int as requested,
			count(*) filter (where approved_at is not null)::int as approved,
			count(*) filter (where status = 'succeeded')::int as succeeded,
			count(*) filter (where status = 'failed')::int as failed,
			count(*) filter (where status = 'denied')::int as denied,
			count(*) filter (where status = 'expired')::int as expired,
			count(*) filter (where status = 'awaiting_approval'
				and created_at < now() - make_interval(hours => ${PENDING_APPROVAL_HOURS}))::int as pending_long,
			max(done_at) filter (where status = 'succeeded') as last_success_at
		from r_ex group by sid
	),
	r_silent as (
		-- failed executions that no later assistant message talks about ('fail', 'error' or the id)
		select f.sid, count(*)::int as n,
			json_agg(json_build_object('id', f.id, 'action', f.action, 'target', f.target, 'error', left(f.error, 200)
				${detail ? sql`, 'next_idx', (select min(n.idx) from r_mf n where n.sid = f.sid and n.role = 'assistant' and n.created_at > f.done_at)` : sql``}
			) order by f.done_at) as list
		from r_ex f
		where f.status = 'failed'
			and not exists (select 1 from messages m cross join lateral jsonb_to_recordset(m.parts) as p(type text, text text)
				where m.session_id = f.sid and m.role = 'assistant' and m.created_at > f.done_at and p.type = 'text'
					and (${likeAny(sql`p.text`, MENTIONS_FAILURE_LIKE)} or strpos(p.text, left(f.id::text, 8)) > 0))
		group by f.sid
	),
	r_qs as (
		select q.session_id as sid, count(*)::int as asked,
			count(*) filter (where q.status = 'answered')::int as answered,
			count(*) filter (where q.status = 'open')::int as open
			${detail ? sql`, json_agg(q.prompt order by q.created_at) filter (where q.status = 'open') as open_prompts` : sql``}
		from session_questions q join r_sess s on s.id = q.session_id group by q.session_id
	),
	r_sf0 as (
		select m.sid,
			count(*)::int as messages,
			count(*) filter (where m.role = 'user')::int as user_messages,
			count(*) filter (where m.role = 'assistant')::int as assistant_messages,
			count(*) filter (where m.role = 'system')::int as system_messages,
			sum(m.calls)::int as tool_calls,
			min(m.created_at) as first_at, max(m.created_at) as last_at,
			max(m.ent_max)::int as n1_max,
			count(*) filter (where m.nudge)::int as nudges,
			count(*) filter (where ${blankCond})::int as blanks,
			count(*) filter (where m.retries > 0)::int as retried,
			count(*) filter (where ${notextCond})::int as notext,
			-- the last assistant message reports success: no later assistant message than the last successful one
			coalesce(max(m.seq) filter (where m.role = 'assistant' and m.reports_success) = max(m.seq) filter (where m.role = 'assistant'), false) as last_ok
			${detail ? sql`,
			${idxArray(sql`m.ent_max >= ${N_PLUS_ONE_MIN}`)} as n1_idx,
			${idxArray(sql`m.nudge`)} as nudge_idx,
			${idxArray(blankCond)} as blank_idx,
			${idxArray(sql`m.retries > 0`)} as retry_idx,
			${idxArray(notextCond)} as notext_idx` : sql``}
		from r_mf m
		group by m.sid
	),
	r_cap as (
		-- a "cannot" or unknown-action message only counts when no execution succeeded after it;
		-- for the one-session page these few messages are read again for the missing name
		select m.sid, m.says_cannot, m.cap_errs
			${detail ? sql`, m.idx, t.cannot_text, t.cap_example, coalesce(t.cap_name, (
				select case
					when c[1] ~* ${CLI_WORDS_RE} and c[2] is not null and c[2] !~* ${STOP_WORDS_RE} then lower(c[1] || '_' || c[2])
					when c[1] ~ '_' then lower(c[1])
				end
				from (select coalesce(regexp_match(t.cannot_text, ${TEXT_NAME_RES[0]}, 'i'), regexp_match(t.cannot_text, ${TEXT_NAME_RES[1]}, 'i'),
					regexp_match(t.cannot_text, ${TEXT_NAME_RES[2]}, 'i')) as c) n)) as nm` : sql``}
		from r_mf m
		left join r_exs x on x.sid = m.sid
		${detail ? sql`cross join lateral (
			select case when m.says_cannot then string_agg(q.text, chr(10)) filter (where q.type = 'text') end as cannot_text,
				min((regexp_match(${errText(sql`q`)}, ${TOOL_NAME_RE}, 'i'))[1]) filter (where ${errText(sql`q`)} ~* ${TOOL_CAP_RE}) as cap_name,
				min(left(${errText(sql`q`)}, 200)) filter (where ${errText(sql`q`)} ~* ${TOOL_CAP_RE}) as cap_example
			from messages mm cross join lateral jsonb_to_recordset(mm.parts) as q(type text, "errorText" text, output jsonb, text text)
			where mm.id = m.id
		) t` : sql``}
		where m.role = 'assistant' and (m.says_cannot or m.cap_errs > 0)
			and (x.last_success_at is null or x.last_success_at <= m.created_at)
	),
	r_caps as (
		select sid, count(*)::int as n
			${detail ? sql`, array_agg(idx order by idx) as cap_idx,
			coalesce(array_agg(distinct nm) filter (where nm is not null), '{}') as cap_names,
			json_agg(json_build_object('idx', idx, 'name', nm, 'says_cannot', says_cannot,
				'excerpt', left(regexp_substr(cannot_text, ${EXCERPT_RE}, 1, 1, 'i'), 240),
				'cap_errs', cap_errs, 'cap_example', cap_example) order by idx) as cap_detail` : sql``}
		from r_cap group by sid
	),
	r_sf as (
		select f.*, s.title, s.created_at,
			coalesce(x.requested, 0) as exec_requested, coalesce(x.approved, 0) as exec_approved,
			coalesce(x.succeeded, 0) as exec_succeeded, coalesce(x.failed, 0) as exec_failed,
			coalesce(x.denied, 0) as exec_denied, coalesce(x.expired, 0) as exec_expired,
			coalesce(x.pending_long, 0) as pending_long,
			coalesce(q.asked, 0) as questions_asked, coalesce(q.answered, 0) as questions_answered, coalesce(q.open, 0) as questions_open,
			coalesce(si.n, 0) as silent_failed, si.list as silent_list,
			case when c.sid is not null then 'high' end as sev_missing_capability,
			case when f.n1_max >= ${N_PLUS_ONE_HIGH} then 'high' when f.n1_max >= ${N_PLUS_ONE_MIN} then 'medium' end as sev_n_plus_one,
			case when f.nudges >= ${NUDGES_MEDIUM} then 'medium' when f.nudges > 0 then 'low' end as sev_operator_as_event_loop,
			case when coalesce(si.n, 0) > 0 or f.blanks > 0 or f.retried > 0 then 'medium' end as sev_silent_failure,
			case when coalesce(q.open, 0) > 0 or coalesce(x.pending_long, 0) > 0 then 'medium'
				when f.notext > 0 then 'low' end as sev_stall,
			(coalesce(x.succeeded, 0) > 0 and f.last_ok and c.sid is null) as reached
			${detail ? sql`, q.open_prompts, coalesce(c.cap_idx, '{}') as cap_idx, coalesce(c.cap_names, '{}') as cap_names, c.cap_detail` : sql``}
		from r_sf0 f
		join r_sess s on s.id = f.sid
		left join r_exs x on x.sid = f.sid
		left join r_qs q on q.sid = f.sid
		left join r_silent si on si.sid = f.sid
		left join r_caps c on c.sid = f.sid
	),
	r_scored as (
		select r_sf.*,
			(case sev_missing_capability when 'high' then ${w.high} else 0 end)
			+ (case sev_n_plus_one when 'high' then ${w.high} when 'medium' then ${w.medium} else 0 end)
			+ (case sev_operator_as_event_loop when 'medium' then ${w.medium} when 'low' then ${w.low} else 0 end)
			+ (case sev_silent_failure when 'medium' then ${w.medium} else 0 end)
			+ (case sev_stall when 'medium' then ${w.medium} when 'low' then ${w.low} else 0 end)
			+ (case when reached then 0 else ${w.low} end) as score,
			array_remove(array[
				case when sev_missing_capability is not null then 'missing_capability' end,
				case when sev_silent_failure is not null then 'silent_failure' end,
				case when sev_n_plus_one is not null then 'n_plus_one' end,
				case when sev_operator_as_event_loop is not null then 'operator_as_event_loop' end,
				case when sev_stall is not null then 'stall' end], null) as kinds
		from r_sf
	)`;
}
