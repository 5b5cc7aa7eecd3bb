import { createHash } from 'node:crypto';
import type { PendingQuery, Row, TransactionSql } from 'postgres';
import type { Sql as PoolSql } from '../index';
import * as rules from '../review-rules';
import type { chatSessions, messageFacts } from '../schema';
import {
	CANNOT_LIKE,
	CANNOT_RE,
	FAILURE_LIKE,
	FAILURE_RE,
	HYPOTHESIS_PART_TYPES,
	MENTIONS_FAILURE_LIKE,
	N_PLUS_ONE_MIN,
	NUDGE_MAX_CHARS,
	NUDGE_RE,
	SUCCESS_LIKE,
	SUCCESS_RE,
	TOOL_CAP_RE,
	TOOL_NAMES
} from '../review-rules';

/** The pool or a transaction on it. */
export type Sql = PoolSql | TransactionSql;
export type Fragment = PendingQuery<Row[]>;

/*
 * The session review's facts: what it needs of each message (`r_m`, computed from the parts by
 * messageFactsSelect), the per-message verdicts (`r_mf`) and their sums per session (`r_sf0`).
 * The review computes them on the fly (one session; every session while the stored facts are
 * stale), and `message_facts` / `session_facts` store them: written in the transaction that
 * writes the message (queries/messages.ts calls refreshMessageFacts), rebuilt from scratch when
 * the rules change (FACTS_VERSION). Each is ONE set of SQL expressions, used both ways.
 */

/**
 * Bump when an expression below changes meaning: stored facts computed by older code are then
 * stale, as after a change in src/lib/server/db/review-rules.ts.
 */
const FACTS_SQL_VERSION = 5;

/**
 * The version of the stored facts this code writes: a hash of every rule constant and of
 * FACTS_SQL_VERSION. The overview reads the stored facts only while the database holds facts of
 * this version (the `review.facts` setting).
 */
export const FACTS_VERSION = createHash('sha256')
	.update(
		JSON.stringify([
			FACTS_SQL_VERSION,
			Object.entries(rules)
				.filter(([, v]) => typeof v !== 'function')
				.sort(([a], [b]) => a.localeCompare(b))
		])
	)
	.digest('hex')
	.slice(0, 16);

/**
 * r_m.tbits, over the message's non-blank text parts: 1 has text, 2 says it cannot (assistant),
 * 4 is not a nudge (user), 16 reports success, 32 reports failure, 64 mentions a failure ('fail',
 * 'error': a failed execution before it is not silent) (assistant); and 128 holds a hypotheses
 * part (HYPOTHESIS_PART_TYPES).
 */
export const TBIT = { text: 1, cannot: 2, notNudge: 4, success: 16, failure: 32, mentionsFailure: 64, hypotheses: 128 } as const;

/** 1-based position of a tool in r_m.tool_counts. */
const toolSlot = (name: (typeof TOOL_NAMES)[number]) => TOOL_NAMES.indexOf(name) + 1;

/** Fragments joined with commas. */
export function commaList(sql: Sql, frags: Fragment[]): Fragment {
	return frags.reduce((acc, f) => sql`${acc}, ${f}`);
}

/**
 * The values as a list of text parameters, for `in (…)` and `array[…]`: not one array
 * parameter (how that goes over depends on the client's type setup), nor a string split in SQL
 * (once Postgres uses a generic plan, that split runs again for every row).
 */
const textList = (sql: Sql, values: readonly string[]) =>
	commaList(
		sql,
		values.map((v) => sql`${v}::text`)
	);

/** `x` lower-cased matches one of the LIKE patterns. */
const likeAny = (sql: Sql, x: Fragment, patterns: string[]) => sql`lower(${x}) like any(array[${textList(sql, patterns)}])`;

/**
 * A failed call's message, for a part `p` of jsonb_to_recordset: the SDK's errorText
 * (output-error), else a result's { error } or a text result (see callError in messages/parts.ts).
 */
export const errText = (sql: Sql, p: Fragment) =>
	sql`coalesce(${p}."errorText", ${p}.output ->> 'error', case when jsonb_typeof(${p}.output) = 'string' then ${p}.output #>> '{}' end)`;

/** A hex run of 8+ characters: where a text can name an execution by its id's first 8 characters. */
const HEX_RUN_RE = '[0-9a-f]{8}';

/**
 * r_m: one row per message of `messages m` that `where` selects (null: all), computed from its
 * parts in one pass, grouped by message id so a scan of the whole table streams over the
 * primary key and runs in parallel workers. Only cheap per-part aggregates: counts per known
 * tool, failed tool names (counted per tool afterwards, per message), and boolean verdicts on
 * text parts, where a regex only runs on texts that pass a LIKE on its keywords.
 *
 * Columns: id, sid, seq, role, status, origin, created_at, calls and tool_counts (per TOOL_NAMES),
 * fail_counts (failed calls per TOOL_NAMES, then of any other name; null: none failed), cap_errs
 * (failed calls told the action or tool does not exist), retries, tbits (TBIT), hex_runs (of the
 * assistant's text parts, space-separated), input_tokens, output_tokens and cached_tokens (of its
 * `data-usage` part: the model's usage in the turn) and model (its first step's). `detail` (what one session's page shows; stored,
 * but not read by the overview) adds summary, text (the start of an assistant's), other_tools
 * (names of calls to tools outside TOOL_NAMES, space-separated) and lxc_refs.
 */
export function messageFactsSelect(sql: Sql, where: Fragment | null, opts: { detail?: boolean } = {}): Fragment {
	const detail = opts.detail ?? false;
	// p: one part of a message (AI SDK UIMessage parts), its fields extracted once. A tool call is
	// a `tool-<name>` part; a Nomos note is a `data-note` part with { kind, text } in `data`.
	const isCall = sql`p.type like 'tool-%'`;
	// The tool's name; '?' for a nameless `tool-` part.
	const toolName = sql`coalesce(nullif(substr(p.type, 6), ''), '?')`;
	// A call failed: output-error, or a result object with an `error` key (as callError), or a
	// text result saying "error". (`?` alone would also match a string or an array element.)
	const failed = sql`(p.state = 'output-error'
		or (p.state = 'output-available' and ((p.output ? 'error' and jsonb_typeof(p.output) = 'object')
			or (jsonb_typeof(p.output) = 'string' and lower(p.output #>> '{}') like '%error%'))))`;
	const toolCounts = commaList(
		sql,
		TOOL_NAMES.map((n) => sql`count(*) filter (where p.type = ${'tool-' + n})`)
	);
	const isKnownCall = sql`p.type in (${textList(
		sql,
		TOOL_NAMES.map((n) => 'tool-' + n)
	)})`;
	// Failed calls per tool, from the failed calls' names (few messages have any).
	const failCounts = commaList(sql, [
		...TOOL_NAMES.map((n) => sql`count(*) filter (where t = ${n})`),
		sql`count(*) filter (where t not in (${textList(sql, TOOL_NAMES)}))`
	]);
	const fullText = sql`coalesce(string_agg(p.text, chr(10)) filter (where p.type = 'text'), '')`;
	const b = TBIT;
	return sql`
		select m.id, m.sid, m.seq, m.role, m.status, m.origin, m.created_at, m.calls, m.tool_counts,
			case when m.failed_tools is not null then (select array[${failCounts}] from string_to_table(replace(m.failed_tools, '!', ''), ' ') t) end::int[] as fail_counts,
			coalesce(length(m.failed_tools) - length(replace(m.failed_tools, '!', '')), 0)::int as cap_errs,
			m.retries, m.tbits, m.hex_runs, m.input_tokens, m.output_tokens, m.cached_tokens, m.model ${detail ? sql`, m.summary, m.text, m.other_tools, m.lxc_refs` : sql``}
		from (select m.id, m.session_id as sid, m.seq, m.role, m.status, m.origin, m.created_at,
			count(*) filter (where ${isCall})::int as calls,
			array[${toolCounts}]::int[] as tool_counts,
			-- failed calls' tool names, space-separated; '!' marks "unknown action/tool" errors
			string_agg(${toolName} || case when ${errText(sql, sql`p`)} ~* ${TOOL_CAP_RE} then '!' else '' end, ' ')
				filter (where ${isCall} and ${failed}) as failed_tools,
			count(*) filter (where p.type = 'data-note' and p.data ->> 'kind' = 'retry')::int as retries,
			-- what the text parts say, as bits (one aggregate instead of six; see TBIT)
			coalesce(bit_or(case when p.type = 'text' and btrim(p.text) <> '' then ${b.text}
				| case when m.role = 'assistant' and ${likeAny(sql, sql`p.text`, CANNOT_LIKE)} and p.text ~* ${CANNOT_RE} then ${b.cannot} else 0 end
				| case when m.role = 'user' and not (length(btrim(p.text)) <= ${NUDGE_MAX_CHARS} and btrim(p.text) ~* ${NUDGE_RE}) then ${b.notNudge} else 0 end
				| case when m.role = 'assistant' and ${likeAny(sql, sql`p.text`, SUCCESS_LIKE)} and p.text ~* ${SUCCESS_RE} then ${b.success} else 0 end
				| case when m.role = 'assistant' and ${likeAny(sql, sql`p.text`, FAILURE_LIKE)} and p.text ~* ${FAILURE_RE} then ${b.failure} else 0 end
				| case when m.role = 'assistant' and ${likeAny(sql, sql`p.text`, MENTIONS_FAILURE_LIKE)} then ${b.mentionsFailure} else 0 end
				when p.type in (${textList(sql, HYPOTHESIS_PART_TYPES)}) then ${b.hypotheses}
				end), 0) as tbits,
			-- its maximal runs, part by part: a part holds an 8-character id prefix exactly when one of
			-- its runs does (no subquery here: it would keep the scan from running in parallel)
			string_agg(btrim(regexp_replace(' ' || regexp_replace(p.text, '[^0-9a-f]+', ' ', 'g') || ' ', ' [0-9a-f]{1,7}(?= )', '', 'g')), ' ')
				filter (where m.role = 'assistant' and p.type = 'text' and p.text ~ ${HEX_RUN_RE}) as hex_runs,
			${usageSum(sql, 'input')} as input_tokens, ${usageSum(sql, 'output')} as output_tokens, ${usageSum(sql, 'cached')} as cached_tokens,
			-- one turn, one model: its first step's ('?' when a usage part names none)
			max(coalesce(p.data -> 'steps' -> 0 ->> 'model', '?')) filter (where p.type = 'data-usage') as model
			${
				detail
					? sql`,
			left(regexp_replace(coalesce(nullif(btrim(${fullText}), ''),
				string_agg(p.data ->> 'text', chr(10)) filter (where p.type = 'data-note'), ''), '[[:space:]]+', ' ', 'g'), 121) as summary,
			case when m.role = 'assistant' then left(${fullText}, 400) end as text,
			string_agg(nullif(substr(p.type, 6), ''), ' ') filter (where ${isCall} and not ${isKnownCall}) as other_tools,
			-- an invalid call keeps its arguments in rawInput (see callInput in messages/parts.ts)
			count(*) filter (where p.type = 'tool-get_entity' and coalesce(p.input, p."rawInput") ->> 'id' ~* '^lxc:')::int as lxc_refs`
					: sql``
			}
		from messages m
		left join lateral jsonb_to_recordset(m.parts)
			as p(type text, state text, "errorText" text, output jsonb, text text, data jsonb ${detail ? sql`, input jsonb, "rawInput" jsonb` : sql``}) on true
		${where ? sql`where ${where}` : sql``}
		group by m.id) m`;
}

/** A message's tokens of one kind, from its `data-usage` part (a value that is not a number counts 0). */
const usageSum = (sql: Sql, key: 'input' | 'output' | 'cached') =>
	sql`coalesce(sum(case when jsonb_typeof(p.data -> ${key}::text) = 'number' then (p.data ->> ${key}::text)::numeric end) filter (where p.type = 'data-usage'), 0)::bigint`;

/** r_m as stored: the `message_facts` rows that `where` selects (a condition on `message_facts f`). */
export function storedMessageFacts(sql: Sql, where: Fragment | null, opts: { detail?: boolean } = {}): Fragment {
	return sql`
		select f.message_id as id, f.session_id as sid, f.seq, f.role, f.status, f.origin, f.created_at,
			f.calls, f.tool_counts, f.fail_counts, f.cap_errs, f.retries, f.tbits, f.hex_runs, f.input_tokens, f.output_tokens, f.cached_tokens, f.model
			${opts.detail ? sql`, f.summary, f.text, f.other_tools, f.lxc_refs` : sql``}
		from message_facts f ${where ? sql`where ${where}` : sql``}`;
}

/** An assistant message saying it cannot, or told the action or tool does not exist (r_mf `m`). */
export const capMessage = (sql: Sql) => sql`m.role = 'assistant' and (m.says_cannot or m.cap_errs > 0)`;

/**
 * r_mf: each message of `r_m` with its verdicts. `detail` adds its position and whether it is
 * the session's last assistant message (window functions over the session).
 */
export function messageVerdictsSelect(sql: Sql, opts: { detail?: boolean } = {}): Fragment {
	const ge = toolSlot('get_entity');
	const gl = toolSlot('get_lxc_state');
	return sql`
		select m.id, m.sid, m.seq, m.role, m.status, m.origin, m.created_at, m.calls, m.retries, m.tool_counts, m.fail_counts, m.cap_errs,
			m.input_tokens, m.output_tokens, m.cached_tokens, m.model,
			m.tbits & ${TBIT.text} = 0 as blank,
			m.tbits & ${TBIT.cannot} <> 0 as says_cannot,
			(m.role = 'user' and m.tbits & ${TBIT.text} <> 0 and m.tbits & ${TBIT.notNudge} = 0) as nudge,
			greatest(m.tool_counts[${ge}], m.tool_counts[${gl}])::int as ent_max,
			case when m.tool_counts[${ge}] >= m.tool_counts[${gl}] then 'get_entity' else 'get_lxc_state' end as ent_tool,
			(m.tbits & ${TBIT.success} <> 0 and m.tbits & ${TBIT.failure} = 0 and m.tbits & ${TBIT.cannot} = 0) as reports_success,
			(m.role = 'assistant' and m.tbits & ${TBIT.mentionsFailure} <> 0) as mentions_failure
			${
				opts.detail
					? sql`,
			(row_number() over (partition by m.sid order by m.seq) - 1)::int as idx,
			m.tbits & ${TBIT.hypotheses} <> 0 as hypotheses,
			(m.role = 'assistant' and m.seq = max(m.seq) filter (where m.role = 'assistant') over (partition by m.sid)) as last_assistant,
			m.summary, m.text, m.lxc_refs, m.other_tools`
					: sql``
			}
		from r_m m`;
}

/**
 * r_sf0: the sums over `r_mf` per session. Columns: sid, messages, user_/assistant_/
 * system_messages, tool_calls, first_at, last_at, n1_max, nudges, blanks, retried, notext,
 * last_ok, tool_counts and fail_counts (summed slot by slot; null: none failed), cap_at (when each
 * "cannot" message was written), mention_at (the last assistant message mentioning a failure),
 * input_tokens, output_tokens and cached_tokens (the model's usage over the session),
 * usage_by_model (the same per model, `{ model: [input, output, cached] }`, for prices) and model
 * (its one key; null when it has none or several: the overview sums one column instead of the jsonb).
 * `detail` adds the message positions behind each count.
 */
export function sessionFactsSelect(sql: Sql, opts: { detail?: boolean } = {}): Fragment {
	const blankCond = sql`m.role = 'assistant' and (m.status = 'error' or (m.status = 'complete' and m.calls = 0 and m.blank))`;
	const notextCond = sql`m.role = 'assistant' and m.status = 'complete' and m.calls > 0 and m.blank`;
	const idxArray = (cond: Fragment) => sql`coalesce(array_agg(m.idx order by m.idx) filter (where ${cond}), '{}')`;
	const sums = (col: Fragment, n: number) =>
		commaList(
			sql,
			Array.from({ length: n }, (_, i) => sql`coalesce(sum(${col}[${i + 1}]), 0)::int`)
		);
	return sql`
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
			coalesce(max(m.seq) filter (where m.role = 'assistant' and m.reports_success) = max(m.seq) filter (where m.role = 'assistant'), false) as last_ok,
			array[${sums(sql`m.tool_counts`, TOOL_NAMES.length)}]::int[] as tool_counts,
			case when count(m.fail_counts) > 0 then array[${sums(sql`m.fail_counts`, TOOL_NAMES.length + 1)}]::int[] end as fail_counts,
			coalesce(array_agg(m.created_at order by m.seq) filter (where ${capMessage(sql)}), '{}') as cap_at,
			max(m.created_at) filter (where m.mentions_failure) as mention_at,
			coalesce(sum(m.input_tokens), 0)::bigint as input_tokens, coalesce(sum(m.output_tokens), 0)::bigint as output_tokens,
			coalesce(sum(m.cached_tokens), 0)::bigint as cached_tokens,
			coalesce(u.usage_by_model, '{}') as usage_by_model, u.model
			${
				opts.detail
					? sql`,
			${idxArray(sql`m.ent_max >= ${N_PLUS_ONE_MIN}`)} as n1_idx,
			${idxArray(sql`m.nudge`)} as nudge_idx,
			${idxArray(blankCond)} as blank_idx,
			${idxArray(sql`m.retries > 0`)} as retry_idx,
			${idxArray(notextCond)} as notext_idx`
					: sql``
			}
		from r_mf m
		-- per model, from r_m (materialized where it is computed from the parts; r_mf is not)
		left join (
			select sid, jsonb_object_agg(model, jsonb_build_array(i, o, c)) as usage_by_model, case when count(*) = 1 then min(model) end as model
			from (select sid, model, sum(input_tokens)::bigint as i, sum(output_tokens)::bigint as o, sum(cached_tokens)::bigint as c
				from r_m where model is not null group by sid, model) y
			group by sid
		) u on u.sid = m.sid
		group by m.sid, u.usage_by_model, u.model`;
}

/** r_sf0's columns as `session_facts` stores them (after session_id). */
const SESSION_COLUMNS =
	'messages, user_messages, assistant_messages, system_messages, tool_calls, first_at, last_at, n1_max, nudges, blanks, retried, notext, last_ok, tool_counts, fail_counts, cap_at, mention_at, input_tokens, output_tokens, cached_tokens, usage_by_model, model'.split(
		', '
	);

/**
 * r_sf0 as stored: the `session_facts` rows that `where` selects (a condition on `session_facts f`);
 * `session` adds the session's created_at (the overview then needs no join with chat_sessions).
 */
export function storedSessionFacts(sql: Sql, where: Fragment | null, opts: { session?: boolean } = {}): Fragment {
	return sql`select f.session_id as sid, ${sql.unsafe(SESSION_COLUMNS.join(', '))} ${opts.session ? sql`, f.session_created_at as created_at` : sql``}
		from session_facts f ${where ? sql`where ${where}` : sql``}`;
}

/**
 * Computes and stores the facts of the messages `where` selects (a condition on `messages m`),
 * then those of their sessions (and of `sessionIds`, whatever messages they have).
 */
async function storeFacts(tx: Sql, where: Fragment, sessionIds: string[] = []): Promise<number> {
	const rows = await tx<{ sid: (typeof messageFacts.$inferSelect)['sessionId'] }[]>`
		insert into message_facts as t (message_id, session_id, seq, role, status, origin, created_at, calls, tool_counts, fail_counts, cap_errs,
			retries, tbits, hex_runs, summary, text, other_tools, lxc_refs, input_tokens, output_tokens, cached_tokens, model)
		select f.id, f.sid, f.seq, f.role, f.status, f.origin, f.created_at, f.calls, f.tool_counts, f.fail_counts, f.cap_errs,
			f.retries, f.tbits, f.hex_runs, f.summary, f.text, f.other_tools, f.lxc_refs, f.input_tokens, f.output_tokens, f.cached_tokens, f.model
		from (${messageFactsSelect(tx, where, { detail: true })}) f
		on conflict (message_id) do update set session_id = excluded.session_id, seq = excluded.seq, role = excluded.role,
			status = excluded.status, origin = excluded.origin, created_at = excluded.created_at, calls = excluded.calls,
			tool_counts = excluded.tool_counts, fail_counts = excluded.fail_counts, cap_errs = excluded.cap_errs, retries = excluded.retries,
			tbits = excluded.tbits, hex_runs = excluded.hex_runs, summary = excluded.summary, text = excluded.text,
			other_tools = excluded.other_tools, lxc_refs = excluded.lxc_refs, input_tokens = excluded.input_tokens,
			output_tokens = excluded.output_tokens, cached_tokens = excluded.cached_tokens, model = excluded.model
		returning t.session_id as sid`;
	await storeSessionFacts(tx, [...new Set([...sessionIds, ...rows.map((r) => r.sid)])]);
	return rows.length;
}

/**
 * Recomputes the stored facts of these sessions from their stored message facts. The sessions'
 * rows are locked first (in id order) and the sums read in a later statement, so of two
 * transactions writing messages of one session the second sums what the first committed.
 */
async function storeSessionFacts(tx: Sql, sessionIds: string[]): Promise<void> {
	if (!sessionIds.length) return;
	const ids = [...sessionIds].sort();
	await tx`select 1 from chat_sessions where id = any(${ids}::uuid[]) order by id for no key update`;
	await tx`
		with r_m as (${storedMessageFacts(tx, tx`f.session_id = any(${ids}::uuid[])`)}),
		r_mf as (${messageVerdictsSelect(tx)}),
		r_sf0 as (${sessionFactsSelect(tx)}),
		gone as (delete from session_facts s where s.session_id = any(${ids}::uuid[]) and s.session_id not in (select sid from r_sf0))
		insert into session_facts (session_id, ${tx.unsafe(SESSION_COLUMNS.join(', '))})
		select sid, ${tx.unsafe(SESSION_COLUMNS.join(', '))} from r_sf0
		on conflict (session_id) do update set ${tx.unsafe(SESSION_COLUMNS.map((c) => `${c} = excluded.${c}`).join(', '))}`;
	// (a trigger copies the session's created_at and replay flag into the row; another one notes the
	// session, so its session_activity row is recomputed at commit: drizzle/0023_session_activity.sql)
}

/**
 * Recomputes the stored facts of these messages (and their sessions') from their rows as this
 * transaction sees them. Every writer of a message's parts or status calls it in the
 * transaction that writes them (see queries/messages.ts).
 */
export async function refreshMessageFacts(tx: Sql, ids: string[]): Promise<void> {
	if (ids.length) await storeFacts(tx, tx`m.id = any(${ids}::uuid[])`);
}

/** Recomputes the stored facts of every message of these sessions (for seeders that write rows with SQL). */
export async function refreshSessionsFacts(tx: Sql, sessionIds: string[]): Promise<number> {
	return sessionIds.length ? storeFacts(tx, tx`m.session_id = any(${sessionIds}::uuid[])`, sessionIds) : 0;
}

/**
 * One step of a rebuild: the facts of every message of the next `limit` sessions after `after`
 * (by id). Their messages are locked (`for share`) first, so a writer that changes one
 * meanwhile either committed before (and this reads its row) or waits and then writes its own
 * facts over these: a rebuild never leaves facts older than their message.
 */
export async function rebuildFactsBatch(
	tx: TransactionSql,
	after: string | null,
	limit: number
): Promise<{ last: string | null; sessions: number; messages: number }> {
	const sessions = await tx<Pick<typeof chatSessions.$inferSelect, 'id'>[]>`
		select id from chat_sessions where ${after}::uuid is null or id > ${after}::uuid order by id limit ${limit}`;
	const ids = sessions.map((s) => s.id);
	if (!ids.length) return { last: null, sessions: 0, messages: 0 };
	await tx`select 1 from messages where session_id = any(${ids}::uuid[]) for share`;
	const messages = await refreshSessionsFacts(tx, ids);
	return { last: ids[ids.length - 1], sessions: ids.length, messages };
}

const STATE_KEY = 'review.facts';

/** The version of the stored facts (null: never built); see FACTS_VERSION. */
export async function storedFactsVersion(sql: Sql): Promise<string | null> {
	// a field of the setting's jsonb value
	const [row] = await sql<{ version: string | null }[]>`select value->>'version' as version from settings where key = ${STATE_KEY}`;
	return row?.version ?? null;
}

/** Records that every message's facts are now of `version` (the end of a rebuild). */
export async function markFactsBuilt(sql: Sql, version: string): Promise<void> {
	await sql`
		insert into settings (key, value) values (${STATE_KEY}, ${JSON.stringify({ version })}::text::jsonb)
		on conflict (key) do update set value = excluded.value, updated_at = now()`;
}
