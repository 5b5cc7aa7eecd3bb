import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../db/index';
import {
	CANNOT_RE,
	CLI_WORDS_RE,
	FAILURE_RE,
	MENTIONS_FAILURE_RE,
	N_PLUS_ONE_HIGH,
	N_PLUS_ONE_MIN,
	NUDGE_RE,
	NUDGES_MEDIUM,
	PENDING_APPROVAL_HOURS,
	SEVERITY_WEIGHT,
	SUCCESS_RE,
	TEXT_NAME_RES,
	TOOL_CAP_RE,
	TOOL_NAME_RE
} from './rules';

export type Fragment = PendingQuery<Row[]>;

/** The sentence around a "cannot" phrase. */
const EXCERPT_RE = String.raw`[^.!?\n]*(?:` + CANNOT_RE + String.raw`)[^.!?\n]*`;

/** Second words that end a command name rather than continue it ("run commands directly"). */
const STOP_WORDS_RE = String.raw`^(for|on|in|as|at|to|here|there|that|this|it|them|yourself|myself|directly|without|because|since|from|with|now|anymore|the|a|an|any|—|-)$`;

/**
 * The CTE chain every review query starts with, over the sessions `sessions` selects
 * (`id, title, created_at`). Everything is computed in Postgres with one pass over each
 * message's parts (jsonb_to_recordset); nothing but aggregates leaves the database.
 *
 * CTEs: r_sess, r_msg (message order), r_pe (message × part type × tool, materialised: the one
 * scan over parts), r_mf (one row per message with its flags), r_ex / r_exs (executions),
 * r_silent (failed executions no later assistant message talks about), r_qs (questions),
 * r_sf (one row per session: counts, evidence arrays, the severity of each finding, score).
 *
 * `detail` adds what only the one-session page shows (top tools, excerpts, lxc refs).
 */
export function reviewCtes(sql: Sql, sessions: Fragment, opts: { detail?: boolean } = {}): Fragment {
	const detail = opts.detail ?? false;
	const w = SEVERITY_WEIGHT;
	// The text a tool result or error gives when the action/tool does not exist.
	const capText = sql`coalesce(p.error, p.output ->> 'error', case when jsonb_typeof(p.output) = 'string' then p.output #>> '{}' end)`;
	return sql`
	r_sess as (${sessions}),
	r_msg as (
		select m.session_id as sid, m.id, m.seq, m.role, m.status, m.origin, m.created_at,
			(row_number() over (partition by m.session_id order by m.seq) - 1)::int as idx,
			(m.role = 'assistant' and row_number() over (partition by m.session_id, m.role order by m.seq desc) = 1) as last_assistant
		from messages m join r_sess s on s.id = m.session_id
	),
	r_pe as materialized (
		select m.session_id as sid, m.id as mid, g.*
		from messages m join r_sess s on s.id = m.session_id
		cross join lateral (
			select p.type, p."toolName" as tool, count(*)::int as n,
				count(*) filter (where p.state = 'error' or p.output ->> 'error' is not null
					or (jsonb_typeof(p.output) = 'string' and p.output #>> '{}' ~* 'error'))::int as errs,
				count(*) filter (where ${capText} ~* ${TOOL_CAP_RE})::int as cap_errs,
				min((regexp_match(${capText}, ${TOOL_NAME_RE}, 'i'))[1]) as cap_name,
				string_agg(p.text, chr(10)) as txt,
				count(*) filter (where p.kind = 'retry')::int as retries
				${detail ? sql`, min(${capText}) filter (where ${capText} ~* ${TOOL_CAP_RE}) as cap_example,
					count(*) filter (where p."toolName" = 'get_entity' and p.input ->> 'id' ~* '^lxc:')::int as lxc_refs` : sql``}
			from jsonb_to_recordset(m.parts) as p(
				type text, "toolName" text, state text, error text, output jsonb, text text, kind text
				${detail ? sql`, input jsonb` : sql``})
			group by 1, 2
		) g
	),
	r_mf as (
		select m.*, coalesce(a.calls, 0) as calls, coalesce(a.ent_max, 0) as ent_max, a.ent_tool,
			coalesce(a.text, '') as text, a.note_text, coalesce(a.cap_errs, 0) as cap_errs, a.cap_name,
			coalesce(a.retries, 0) as retries,
			(m.role = 'assistant' and coalesce(a.text, '') ~* ${CANNOT_RE}) as says_cannot,
			(m.role = 'user' and btrim(coalesce(a.text, '')) ~* ${NUDGE_RE}) as nudge
			${detail ? sql`, a.top_tools, a.cap_example, coalesce(a.lxc_refs, 0) as lxc_refs` : sql``}
		from r_msg m left join (
			select mid,
				sum(n) filter (where type = 'tool-call')::int as calls,
				max(n) filter (where tool in ('get_entity', 'get_lxc_state'))::int as ent_max,
				(array_agg(tool order by n desc, tool) filter (where tool in ('get_entity', 'get_lxc_state')))[1] as ent_tool,
				string_agg(txt, chr(10)) filter (where type = 'text') as text,
				string_agg(txt, chr(10)) filter (where type = 'note') as note_text,
				sum(cap_errs)::int as cap_errs, min(cap_name) as cap_name, sum(retries)::int as retries
				${detail ? sql`, json_agg(json_build_object('tool', tool, 'n', n) order by n desc, tool) filter (where type = 'tool-call') as top_tools,
					min(cap_example) as cap_example, sum(lxc_refs)::int as lxc_refs` : sql``}
			from r_pe group by mid
		) a on a.mid = m.id
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
		select f.sid, count(*)::int as n,
			json_agg(json_build_object('id', f.id, 'action', f.action, 'target', f.target, 'error', left(f.error, 200)
				${detail ? sql`, 'next_idx', (select min(n.idx) from r_mf n where n.sid = f.sid and n.role = 'assistant' and n.created_at > f.done_at)` : sql``}
			) order by f.done_at) as list
		from r_ex f
		where f.status = 'failed' and not exists (
			select 1 from r_mf m
			where m.sid = f.sid and m.role = 'assistant' and m.created_at > f.done_at
				and (m.text ~* ${MENTIONS_FAILURE_RE} or position(left(f.id::text, 8) in m.text) > 0))
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
			coalesce(array_agg(m.idx order by m.idx) filter (where m.ent_max >= ${N_PLUS_ONE_MIN}), '{}') as n1_idx,
			coalesce(array_agg(m.idx order by m.idx) filter (where m.nudge), '{}') as nudge_idx,
			coalesce(array_agg(m.idx order by m.idx) filter (where m.role = 'assistant'
				and (m.status = 'error' or (m.status = 'complete' and m.calls = 0 and btrim(m.text) = ''))), '{}') as blank_idx,
			coalesce(array_agg(m.idx order by m.idx) filter (where m.retries > 0), '{}') as retry_idx,
			coalesce(array_agg(m.idx order by m.idx) filter (where m.role = 'assistant' and m.status = 'complete'
				and m.calls > 0 and btrim(m.text) = ''), '{}') as notext_idx,
			bool_or(m.last_assistant and m.text ~* ${SUCCESS_RE} and m.text !~* ${FAILURE_RE} and not m.says_cannot) as last_ok
		from r_mf m
		group by m.sid
	),
	r_cap as (
		-- a "cannot" or unknown-action message only counts when no execution succeeded after it
		select m.sid, m.idx, m.says_cannot, m.cap_errs, n.nm
			${detail ? sql`, m.text, m.cap_example` : sql``}
		from r_mf m
		left join r_exs x on x.sid = m.sid
		cross join lateral (select coalesce(m.cap_name, case when m.says_cannot then (
			select case
				when c[1] ~* ${CLI_WORDS_RE} and c[2] is not null and c[2] !~* ${STOP_WORDS_RE} then lower(c[1] || '_' || c[2])
				when c[1] ~ '_' then lower(c[1])
			end
			from (select coalesce(regexp_match(m.text, ${TEXT_NAME_RES[0]}, 'i'), regexp_match(m.text, ${TEXT_NAME_RES[1]}, 'i'),
				regexp_match(m.text, ${TEXT_NAME_RES[2]}, 'i')) as c) t) end) as nm) n
		where m.role = 'assistant' and (m.says_cannot or m.cap_errs > 0)
			and (x.last_success_at is null or x.last_success_at <= m.created_at)
	),
	r_caps as (
		select sid, array_agg(idx order by idx) as cap_idx,
			coalesce(array_agg(distinct nm) filter (where nm is not null), '{}') as cap_names
			${detail ? sql`, json_agg(json_build_object('idx', idx, 'name', nm, 'says_cannot', says_cannot,
				'excerpt', left(regexp_substr(text, ${EXCERPT_RE}, 1, 1, 'i'), 240),
				'cap_errs', cap_errs, 'cap_example', left(cap_example, 200)) order by idx) as cap_detail` : sql``}
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
			coalesce(c.cap_idx, '{}') as cap_idx, coalesce(c.cap_names, '{}') as cap_names,
			case when c.sid is not null then 'high' end as sev_missing_capability,
			case when f.n1_max >= ${N_PLUS_ONE_HIGH} then 'high' when f.n1_max >= ${N_PLUS_ONE_MIN} then 'medium' end as sev_n_plus_one,
			case when cardinality(f.nudge_idx) >= ${NUDGES_MEDIUM} then 'medium' when cardinality(f.nudge_idx) > 0 then 'low' end as sev_operator_as_event_loop,
			case when coalesce(si.n, 0) > 0 or cardinality(f.blank_idx) > 0 or cardinality(f.retry_idx) > 0 then 'medium' end as sev_silent_failure,
			case when coalesce(q.open, 0) > 0 or coalesce(x.pending_long, 0) > 0 then 'medium'
				when cardinality(f.notext_idx) > 0 then 'low' end as sev_stall,
			(coalesce(x.succeeded, 0) > 0 and coalesce(f.last_ok, false) and c.sid is null) as reached
			${detail ? sql`, q.open_prompts, c.cap_detail` : sql``}
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
