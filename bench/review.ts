// Session-review benchmark: `npm run bench:review`.
//
// Starts its own embedded Postgres in a temp dir, migrates it, seeds 10,000 sessions holding
// 1,000,000 tool calls with set-based SQL (a realistic mix: N+1 reads, nudging operators,
// unknown actions, silent failures, stalls, a few big sessions and one with 6,000 calls),
// builds the review's stored facts with the rebuild (as `npm run review:rebuild` does: the
// seed writes rows with SQL, not through the app's writers), then times the cross-session
// page's data (reviewOverview) and the biggest session's review (reviewSession), each from the
// stored facts and from every message's parts (what runs while facts are rebuilt), checks
// both give the same answers, and compares the medians with their targets. Stops Postgres and
// removes the dir at the end.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { connectDb, disconnectDb, sql as appSql } from '../src/lib/server/db/index';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/lib/server/db/embedded';
import { runMigrations } from '../src/lib/server/db/migrate';
import { reviewOverview, reviewSession } from '../src/lib/server/review';
import { rebuildReviewFacts } from '../src/lib/server/review/rebuild';
import { freePort } from '../tests/helpers/ports';
import { envInt, SMOKE } from './harness';

// Sizes (env): BENCH_SESSIONS=10000 BENCH_TOOL_CALLS=1000000 BENCH_RUNS=25 (the big sessions scale with the calls).
const SESSIONS = envInt('BENCH_SESSIONS', 10_000, 30);
const TOOL_CALLS = envInt('BENCH_TOOL_CALLS', 1_000_000, 1_000);
const SCALE = TOOL_CALLS / 1_000_000;
/** Session 1: 20 assistant turns × 300 calls. Sessions 2–21: 10 turns × 150 calls (at a million calls). */
const HUGE = { turns: 20, perTurn: Math.max(1, Math.round(300 * SCALE)) };
const BIG = { sessions: 20, turns: 10, perTurn: Math.max(1, Math.round(150 * SCALE)) };
const RUNS = ((n) => ({ overview: n, overviewParts: Math.max(1, Math.round(n / 5)), session: n }))(envInt('BENCH_RUNS', 25));
/** Medians from the stored facts (issue 15). The parts scan (while facts are rebuilt) is shown for comparison. */
const TARGET_MS = { overview: 150, session: 20 };

const log = (s: string) => process.stdout.write(s + '\n');
const ms = (n: number) => `${n.toFixed(n < 10 ? 1 : 0)} ms`;

async function seed(): Promise<void> {
	const sql = appSql();
	const restCalls = TOOL_CALLS - HUGE.turns * HUGE.perTurn - BIG.sessions * BIG.turns * BIG.perTurn;

	// One row per session: its shape and which failure modes it shows.
	await sql.unsafe(`
		create unlogged table bench_plan as
		select i, gen_random_uuid() as sid,
			case when i = 1 then ${HUGE.turns} when i <= ${1 + BIG.sessions} then ${BIG.turns} else 2 + (i * 7) % 6 end as turns,
			(i % 7 = 0 or i <= ${1 + BIG.sessions}) as n1,   -- get_entity / get_lxc_state per container
			(i % 5 = 0) as nudgy,                            -- operator types "continue"
			(i % 33 = 0) as capgap,                          -- unknown action, "I can't run …"
			(i % 9 = 0) as failing,                          -- tool errors, a failed execution nobody mentions
			(i % 4 <> 0 and i % 33 <> 0) as success,         -- an execution succeeded and the agent says so
			(i % 11 = 0) as asks,                            -- asked the operator (open when i % 22 = 0)
			(i % 50 = 0) as retried,                         -- an empty model reply was retried
			now() - make_interval(days => i % 90, secs => (i * 7919) % 86400) as t0
		from generate_series(1, ${SESSIONS}) i`);

	await sql.unsafe(`
		insert into chat_sessions (id, title, created_at, updated_at)
		select sid, 'Session ' || i || case when i = 1 then ' (huge)' when i <= ${1 + BIG.sessions} then ' (big)' else '' end, t0, t0 + make_interval(mins => turns * 6 + 1)
		from bench_plan`);
	// One row per assistant turn with its number of tool calls. The regular sessions share the
	// rest by weight; floor(total·cum/W) − floor(total·(cum−w)/W) telescopes to exactly the total.
	await sql.unsafe(`
		create unlogged table bench_turns as
		with t as (
			select p.i, p.sid, t, 1 + (p.i * 31 + t * 17) % 10 as w
			from bench_plan p, generate_series(1, p.turns) t
		), c as (
			select t.*, sum(w) over (order by i, t) as cum, sum(w) over () as total_w from t where i > ${1 + BIG.sessions}
		)
		select i, sid, t, (floor(${restCalls}::numeric * cum / total_w) - floor(${restCalls}::numeric * (cum - w) / total_w))::int as calls
		from c
		union all
		select i, sid, t, case when i = 1 then ${HUGE.perTurn} else ${BIG.perTurn} end
		from t where i <= ${1 + BIG.sessions}`);

	// Messages: user, assistant (tool calls + text), per turn; built in batches of sessions. Parts
	// are the AI SDK's UIMessage parts as the app stores them: an assistant message is
	// [step-start, text, tool-<name> × n, (data-note retry), step-start, text].
	const batch = 500;
	for (let lo = 1; lo <= SESSIONS; lo += batch) {
		await sql.unsafe(`
			insert into messages (session_id, role, parts, status, origin, created_at, updated_at)
			select m.sid, m.role, m.parts, m.status, m.origin, m.at, m.at from (
				select p.sid, p.i, tt.t, 0 as k, 'user' as role, 'complete' as status, 'chat' as origin,
					p.t0 + make_interval(mins => tt.t * 6) as at,
					jsonb_build_array(jsonb_build_object('type', 'text', 'text',
						case when tt.t = 1 then 'please set up service ' || p.i || ' on strong'
							when p.nudgy then (array['continue', 'proceed', '??', 'continue', 'go on'])[1 + (p.i + tt.t) % 5]
							else 'also check the backups of ct ' || (100 + tt.t) end)) as parts
				from bench_plan p join bench_turns tt on tt.sid = p.sid
				where p.i between ${lo} and ${lo + batch - 1}
				union all
				select p.sid, p.i, tt.t, 1, 'assistant', 'complete', 'chat',
					p.t0 + make_interval(mins => tt.t * 6 + 1),
					jsonb_build_array(jsonb_build_object('type', 'step-start'),
						jsonb_build_object('type', 'text', 'text', 'Looking into it (step ' || tt.t || ').', 'state', 'done'))
					|| coalesce(calls.parts, '[]'::jsonb)
					|| case when p.retried and tt.t = p.turns then jsonb_build_array(jsonb_build_object('type', 'data-note', 'data',
						jsonb_build_object('kind', 'retry', 'text', 'The model returned nothing (an empty reply); retrying once…'))) else '[]'::jsonb end
					-- the text after the tool calls starts the next step
					|| case when calls.parts is not null then '[{"type": "step-start"}]'::jsonb else '[]'::jsonb end
					|| jsonb_build_array(jsonb_build_object('type', 'text', 'state', 'done', 'text',
						case when tt.t < p.turns then 'Here is what I found so far; next I will look at the containers.'
							when p.capgap then 'I can''t run pct create — only pct_exec, systemctl, restart, apt_upgrade.'
							when p.success then 'Done: service ' || p.i || ' is deployed and running.'
							else 'I have collected the state; waiting for your go-ahead.' end))
					-- the turn's usage (what the overview prices per model): two models, a third of sessions each other
					|| jsonb_build_array(jsonb_build_object('type', 'data-usage', 'id', 'usage', 'data', jsonb_build_object(
						'steps', jsonb_build_array(jsonb_build_object('model', case when p.i % 3 = 0 then 'qwen3:32b' else 'gpt-4o-mini' end,
							'input', 4000 + tt.t * 500, 'output', 300, 'cached', 2000)),
						'input', 4000 + tt.t * 500, 'output', 300, 'cached', 2000)))
				from bench_plan p join bench_turns tt on tt.sid = p.sid
				cross join lateral (
					select jsonb_agg(jsonb_build_object(
						'type', 'tool-' || tool, 'toolCallId', 'call_' || tt.t || '_' || k,
						'input', case tool
							when 'get_entity' then jsonb_build_object('id', 'lxc:strong/' || (100 + k % 40))
							when 'get_lxc_state' then jsonb_build_object('vmid', (100 + k % 40)::text)
							when 'search_knowledge' then jsonb_build_object('query', 'service ' || p.i || ' setup ' || k)
							when 'http_get' then jsonb_build_object('url', 'https://example.org/docs/' || k)
							when 'request_execution' then jsonb_build_object('target', 'strong', 'action',
								case when p.capgap then 'pct_create' else 'restart' end, 'params', jsonb_build_object('unit', 'svc'), 'reason', 'asked')
							else '{}'::jsonb end,
						'state', case when p.failing and tool = 'http_get' and k % 3 = 0 then 'output-error' else 'output-available' end)
						|| case
							when p.failing and tool = 'http_get' and k % 3 = 0 then jsonb_build_object('errorText', 'HTTP 503 from example.org')
							else jsonb_build_object('output', case tool
								when 'get_entity' then jsonb_build_object('ref', 'lxc:strong/' || (100 + k % 40), 'name', 'ct-' || (100 + k % 40),
									'status', 'running', 'attributes', jsonb_build_object('cores', 2, 'memory', 2048, 'ips', jsonb_build_array('10.0.0.' || (k % 250))))
								when 'get_lxc_state' then jsonb_build_object('vmid', (100 + k % 40)::text, 'status', 'running', 'cpu', 0.04, 'mem', 734003200, 'uptime', 86400 + k)
								when 'search_knowledge' then jsonb_build_object('results', jsonb_build_array(
									jsonb_build_object('title', 'Runbook ' || (k % 30), 'snippet', 'To deploy a service on strong, create a Debian 12 container, install the runtime and add a Caddy route.'),
									jsonb_build_object('title', 'Host strong', 'snippet', 'strong: Proxmox VE 8, 64 GB RAM, ZFS pool tank.')))
								when 'list_lxcs' then jsonb_build_object('containers', (select jsonb_agg(jsonb_build_object('vmid', 100 + v, 'name', 'ct-' || (100 + v), 'status', 'running'))
									from generate_series(0, 5) v))
								when 'request_execution' then case when p.capgap
									then jsonb_build_object('error', 'unknown action ''pct_create''', 'hint', 'valid actions: pct_status, pct_config, service_status, restart, systemctl, pct_exec, apt_upgrade')
									else jsonb_build_object('status', 'awaiting_approval', 'executionId', gen_random_uuid()) end
								when 'http_get' then jsonb_build_object('status', 200, 'body', 'Installation: download the release, set the environment, start the unit.')
								else jsonb_build_object('ok', true) end)
						end
						order by k) as parts
					from generate_series(1, tt.calls) k
					cross join lateral (select case
						when p.n1 and tt.t = 1 and k <= 24 then case when p.i % 2 = 0 then 'get_entity' else 'get_lxc_state' end
						else (array['search_knowledge', 'list_lxcs', 'get_state_snapshot', 'http_get', 'search_knowledge', 'get_entity',
							'request_execution', 'search_knowledge', 'get_execution_status', 'http_get', 'list_entities', 'get_lxc_state'])[1 + (k * 7 + tt.t * 3 + p.i) % 12]
						end as tool) tl
				) calls
				where p.i between ${lo} and ${lo + batch - 1}
			) m
			order by m.i, m.t, m.k`);
		if (lo % 2500 === 1) log(`  seeded sessions ${lo}…${Math.min(lo + batch * 5 - 1, SESSIONS)}`);
	}

	await sql.unsafe(`
		insert into executions (requested_by_session, target, action, classification, hash, status, error, created_at, approved_at, finished_at)
		select p.sid, 'lxc:strong/' || (100 + p.i % 40), e.action, 'config_mutation', md5(p.sid::text || e.n), e.status, e.error,
			p.t0 + make_interval(mins => p.turns * 6 - 3), case when e.status in ('succeeded', 'failed') then p.t0 + make_interval(mins => p.turns * 6 - 2) end,
			p.t0 + make_interval(mins => p.turns * 6 - 1)
		from bench_plan p
		cross join lateral (values
			(1, case when p.success then 'restart' end, 'succeeded', null::text),
			(2, case when p.failing then 'pct_exec' end, 'failed', 'exit 1: unit not found'),
			(3, case when p.i % 13 = 0 then 'apt_upgrade' end, 'denied', null),
			(4, case when p.i % 17 = 0 then 'systemctl' end, 'expired', null),
			(5, case when p.i % 97 = 0 then 'pct_stop' end, 'awaiting_approval', null)
		) as e(n, action, status, error)
		where e.action is not null`);
	await sql.unsafe(`
		insert into session_questions (session_id, prompt, status, answer, created_at, answered_at)
		select sid, 'Which host should service ' || i || ' run on?', case when i % 22 = 0 then 'open' else 'answered' end,
			case when i % 22 = 0 then null else 'strong' end, t0 + interval '2 minutes', case when i % 22 = 0 then null else t0 + interval '5 minutes' end
		from bench_plan where asks`);
	await sql.unsafe(`drop table bench_turns; drop table bench_plan`);
}

function stats(xs: number[]) {
	const s = [...xs].sort((a, b) => a - b);
	const q = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
	return { median: q(0.5), p95: q(0.95), min: s[0], max: s[s.length - 1] };
}

async function time<T>(runs: number, f: () => Promise<T>): Promise<{ times: number[]; last: T }> {
	let last = await f(); // warm-up (plan cache, buffers)
	const times: number[] = [];
	for (let i = 0; i < runs; i++) {
		const t = performance.now();
		last = await f();
		times.push(performance.now() - t);
	}
	return { times, last };
}

async function main() {
	const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-bench-review-'));
	let pg: EmbeddedPostgres | undefined;
	const cleanup = async () => {
		await disconnectDb().catch(() => undefined);
		await pg?.stop().catch(() => undefined);
		await fs.rm(dir, { recursive: true, force: true });
	};
	for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanup().finally(() => process.exit(130)));
	try {
		log(`embedded Postgres in ${dir}`);
		pg = await startEmbeddedPostgres({ dataDir: dir, port: await freePort() });
		await runMigrations(pg.url);
		connectDb(pg.url);
		const sql = appSql();

		const t0 = performance.now();
		log(`seeding ${SESSIONS.toLocaleString('en')} sessions / ${TOOL_CALLS.toLocaleString('en')} tool calls…`);
		await seed();
		await sql.unsafe('analyze');
		const [counts] = await sql<{ sessions: number; messages: number; calls: number; biggest: string; biggest_calls: number; mb: number }[]>`
			with per as (
				select session_id, count(*) filter (where e ->> 'type' like 'tool-%')::int as calls
				from messages, jsonb_array_elements(parts) e group by session_id
			)
			select (select count(*)::int from chat_sessions) as sessions, (select count(*)::int from messages) as messages,
				(select sum(calls)::int from per) as calls,
				(select session_id from per order by calls desc limit 1) as biggest,
				(select max(calls) from per) as biggest_calls,
				(pg_total_relation_size('messages') / 1048576)::int as mb`;
		log(
			`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${counts.sessions} sessions, ${counts.messages} messages, ` +
				`${counts.calls} tool calls (messages table ${counts.mb} MB); biggest session ${counts.biggest_calls} calls`
		);
		if (counts.calls !== TOOL_CALLS) throw new Error(`expected ${TOOL_CALLS} tool calls, seeded ${counts.calls}`);

		const load = () =>
			os
				.loadavg()
				.map((x) => x.toFixed(2))
				.join(' ');
		log(`building the review facts (load average ${load()})…`);
		const tf = performance.now();
		const built = await rebuildReviewFacts({ wait: true });
		// vacuumed as autovacuum would soon do: else it vacuums the fresh facts while the timing runs
		await sql.unsafe('vacuum (analyze) message_facts, session_facts');
		const factsMs = performance.now() - tf;
		const [size] = await sql<
			{ mb: number }[]
		>`select ((pg_total_relation_size('message_facts') + pg_total_relation_size('session_facts')) / 1048576)::int as mb`;
		log(`facts built in ${(factsMs / 1000).toFixed(1)} s: ${built!.messages} messages, ${built!.sessions} sessions (${size.mb} MB)`);

		log(`timing… (${os.cpus().length} CPUs, load average ${load()})`);
		const month = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
		const recent = { from: month, outcome: 'not_reached' } as const;
		const overview = await time(RUNS.overview, () => reviewOverview({}));
		const overview30 = await time(RUNS.overview, () => reviewOverview(recent));
		const session = await time(RUNS.session, () => reviewSession(counts.biggest));
		const overviewParts = await time(RUNS.overviewParts, () => reviewOverview({}, sql, { source: 'parts' }));
		const overview30Parts = await time(RUNS.overviewParts, () => reviewOverview(recent, sql, { source: 'parts' }));
		const sessionParts = await time(RUNS.session, () => reviewSession(counts.biggest, sql, { source: 'parts' }));
		if (overview.last.source !== 'facts') throw new Error('the overview did not read the stored facts');
		const same = (a: unknown, b: unknown) => JSON.stringify({ ...(a as object), source: null }) === JSON.stringify({ ...(b as object), source: null });
		if (!same(overview.last, overviewParts.last) || !same(overview30.last, overview30Parts.last) || !same(session.last, sessionParts.last)) {
			throw new Error('the stored facts and the parts gave different answers');
		}
		log('facts and parts give the same answers (overview, last 30 days, biggest session)');

		const o = overview.last;
		log(
			`overview: ${o.sessionCount} sessions, ${o.reachedCount} reached, ${o.toolCallCount} tool calls; top kinds ` +
				o.kinds.map((k) => `${k.kind} ${k.sessions}`).join(', ')
		);
		const s = session.last!;
		log(
			`biggest session: ${s.totals.messages} messages, ${s.totals.toolCalls} tool calls, findings ${s.findings.map((f) => `${f.kind}/${f.severity}`).join(', ')}`
		);

		const rows = [
			{ name: `reviewOverview({}) — all ${SESSIONS} sessions, facts`, runs: overview.times, target: TARGET_MS.overview },
			{ name: 'reviewOverview(last 30 days, not reached), facts', runs: overview30.times, target: TARGET_MS.overview },
			{ name: `reviewSession(biggest, ${s.totals.toolCalls} calls), facts`, runs: session.times, target: TARGET_MS.session },
			{ name: `reviewOverview({}) — all ${SESSIONS} sessions, parts scan`, runs: overviewParts.times, target: null },
			{ name: 'reviewOverview(last 30 days, not reached), parts scan', runs: overview30Parts.times, target: null },
			{ name: `reviewSession(biggest, ${s.totals.toolCalls} calls), parts scan`, runs: sessionParts.times, target: null }
		];
		const w = Math.max(...rows.map((r) => r.name.length));
		log('');
		log(`${'measurement'.padEnd(w)} | runs | median    | p95       | median ≤  | ok`);
		log(`${'-'.repeat(w)}-|------|-----------|-----------|-----------|---`);
		let ok = true;
		for (const r of rows) {
			const st = stats(r.runs);
			const pass = r.target === null || st.median <= r.target;
			ok &&= pass;
			log(
				`${r.name.padEnd(w)} | ${String(r.runs.length).padStart(4)} | ${ms(st.median).padStart(9)} | ${ms(st.p95).padStart(9)} | ${(r.target === null ? '—' : ms(r.target)).padStart(9)} | ${r.target === null ? '' : pass ? 'yes' : 'NO'}`
			);
		}
		log(`load average after: ${load()} (other processes share these CPUs; figures include that)`);
		log('');
		process.exitCode = ok || SMOKE ? 0 : 1;
	} finally {
		await cleanup();
	}
}

await main();
