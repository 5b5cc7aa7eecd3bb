// `npm run bench:chaos` — does Nomos pick itself up (issue #27)? N web + M worker processes on one
// Postgres, --sessions operators looping "request a change → approve → the agent follows up"
// through the web processes' HTTP API, and a random Nomos process SIGKILLed (or, --sigterm-share
// of the time, SIGTERMed) every --kill-min … --kill-max seconds; each killed process comes back
// after --restart-delay seconds (systemd's Restart=always). After the run, --drain seconds
// without kills, then the counts (goal: 0 each) and the time from each kill to the resumption
// of the killed process's work (goal: p95 ≤ 10 s).
//
//   1. one embedded Postgres in a temp dir (the "external" database: DATABASE_URL of every
//      process), the SSH Proxmox double (node `strong`; CT 200+i, running, per session) and the
//      scripted LLM double as child processes; the app built when build/ is stale;
//   2. the fleet: `node server.js` (NODE_ENV=production, NOMOS_WORKER=off, own PORT/ORIGIN) and
//      `node --import tsx scripts/worker.ts`, logs in <tmp>/logs;
//   3. each session loops: the operator sends `chaos <tag> request {…}`; the model (a rule of the
//      LLM double) calls request_execution with exactly that; the operator approves it with the
//      card's route; the continuation turn answers. The change alternates between `pct set
//      --description <tag>` on CT 200+i and create / start / stop / unlock / destroy of CT 300+i;
//   4. from the database, the double's argv log and its stored state (bench/chaos/measure.ts,
//      truth.ts, resumption.ts): messages lost, approved executions never terminal, mutations run
//      twice, resends, waits over 15 s, outcomes the host contradicts, kill → resumption.
//
// Exits 0 after printing (non-zero only when the harness itself fails). Stops every child and
// removes its temp dir at the end and on Ctrl-C (--keep keeps the dir and the logs).
//
//   npm run bench:chaos -- --seconds 180
// Options: --web N (2) --workers M (2) --sessions S (10) --minutes 15 | --seconds T  --seed 1
//          --kill-min 20 --kill-max 60 (s)  --sigterm-share 0.25  --restart-delay 1-5 (s)
//          --stop-timeout 90 (s: SIGTERM → SIGKILL, as systemd's TimeoutStopSec)
//          --patience 90 (s an operator waits at one step before asking anew)  --drain 60 (s)  --keep
//          --slow-host N (s): the slow-host mode of #42 instead (bench/chaos/slow-host.ts): every host
//          command +N s, no kills, each session loops a download + create + deploy plan; reports plans
//          completed and false "absent" statements (goal 0). NOMOS_HOST_WAIT_MIN in the environment
//          reaches the fleet: e.g. `NOMOS_HOST_WAIT_MIN=0.5 npm run bench:chaos -- --slow-host 4 --seconds 180`
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import type { EmbeddedPostgres } from '../src/lib/server/db/embedded';
import { llmControl } from '../tests/doubles/llm/client';
import type { FallbackRule } from '../tests/doubles/llm/types';
import type { SeedCt } from '../tests/doubles/proxmox/state';
import { readCpu, type CpuGroups } from './cpu-share';
import { benchPort, benchPostgres, exitCleanly, loadAverage, ROOT, sleep, startDouble, stopChild, type ProxmoxDoubleInfo } from './harness';
import { Fleet } from './chaos/fleet';
import { Operator, signIn } from './chaos/operator';
import { Random } from './chaos/random';
import { JobOwners, JobWatch, resolveWork, snapshotWork, type KillWork } from './chaos/resumption';
import { measure } from './chaos/measure';
import { BASE_GENERATIONS, BASE_VMID, openSession, runSession, settleFinal, vmidOf, type LoopRecord } from './chaos/sessions';
import { TruthLedger } from './chaos/truth';
import { printReport } from './chaos/report';
import { measureAbsent, PLAN_RULE, printSlowHostReport, runPlanLoops, slowTheHost, type PlanRecord } from './chaos/slow-host';
import type { ChildProcess } from 'node:child_process';

process.chdir(ROOT);

const { values: opts } = parseArgs({
	options: {
		web: { type: 'string', default: '2' },
		workers: { type: 'string', default: '2' },
		sessions: { type: 'string', default: '10' },
		minutes: { type: 'string', default: '15' },
		seconds: { type: 'string' },
		seed: { type: 'string', default: '1' },
		'kill-min': { type: 'string', default: '20' },
		'kill-max': { type: 'string', default: '60' },
		'sigterm-share': { type: 'string', default: '0.25' },
		'restart-delay': { type: 'string', default: '1-5' },
		'stop-timeout': { type: 'string', default: '90' },
		patience: { type: 'string', default: '90' },
		drain: { type: 'string', default: '60' },
		keep: { type: 'boolean', default: false },
		'slow-host': { type: 'string', default: '0' }
	}
});

function num(name: string, raw: string | undefined, min: number, max = Infinity): number {
	const n = Number(raw);
	if (!Number.isFinite(n) || n < min || n > max) throw new Error(`--${name} must be a number from ${min} to ${max}, got ${raw}`);
	return n;
}
const WEB = num('web', opts.web, 1, 16);
const WORKERS = num('workers', opts.workers, 1, 16);
const SESSIONS = num('sessions', opts.sessions, 1, 99);
const RUN_MS = (opts.seconds !== undefined ? num('seconds', opts.seconds, 1) : num('minutes', opts.minutes, 0.5) * 60) * 1000;
const SEED = num('seed', opts.seed, 0);
const KILL_MIN = num('kill-min', opts['kill-min'], 1) * 1000;
const KILL_MAX = Math.max(KILL_MIN, num('kill-max', opts['kill-max'], 1) * 1000);
const SIGTERM_SHARE = num('sigterm-share', opts['sigterm-share'], 0, 1);
const [RESTART_MIN, RESTART_MAX] = (() => {
	const m = /^(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?$/.exec(opts['restart-delay']);
	if (!m) throw new Error(`--restart-delay must be S or MIN-MAX seconds, got ${opts['restart-delay']}`);
	return [Number(m[1]) * 1000, Number(m[2] ?? m[1]) * 1000];
})();
const STOP_TIMEOUT_MS = num('stop-timeout', opts['stop-timeout'], 1) * 1000;
const PATIENCE_MS = num('patience', opts.patience, 5) * 1000;
const DRAIN_MS = num('drain', opts.drain, 0) * 1000;
const SLOW_HOST = num('slow-host', opts['slow-host'], 0, 600);
const OPERATOR = { username: 'chaos', password: 'chaos-password-1234' };

const log = (s: string) => console.log(`[chaos] ${s}`);

/** The model: one rule per kind of request, whatever the session and however turns interleave. */
const MODEL_RULES: FallbackRule[] = [
	PLAN_RULE,
	{ whenLastMessageRole: 'tool', respond: { text: 'Requested; it waits for your approval.' } },
	// The operator's words carry the exact request_execution arguments.
	{
		whenLastMessageRole: 'user',
		whenLastMessageMatches: '^chaos (\\S+) request (\\{.*\\})$',
		respond: { toolCalls: [{ name: 'request_execution', args: '$2' }] }
	},
	{ whenLastMessageMatches: '^\\[system note[^\\]]*\\] execution ([0-9a-f-]{36})', respond: { text: 'Checked the outcome of execution $1: noted.' } },
	{ respond: { text: 'Noted.' } }
];

// ------------------------------------------------------------------------ children / cleanup

let tmp: string | undefined;
let pg: EmbeddedPostgres | undefined;
let db: postgres.Sql | undefined;
let fleet: Fleet | undefined;
const doubles: ChildProcess[] = [];
const cleanup = exitCleanly({
	log,
	pg: () => pg,
	stop: async () => {
		await fleet?.stop().catch((e: Error) => log(`stopping the fleet: ${e.message}`));
		await db?.end({ timeout: 5 }).catch(() => undefined);
		await Promise.all(doubles.map((c) => stopChild(c)));
		await pg?.stop().catch((e: Error) => log(`stopping Postgres: ${e.message}`));
		if (tmp && !opts.keep) await fs.rm(tmp, { recursive: true, force: true });
		else if (tmp) log(`kept ${tmp} (logs in ${path.join(tmp, 'logs')})`);
	},
	kill: () => {
		fleet?.killAllNow();
		for (const c of doubles) if (c.exitCode === null) c.kill('SIGKILL');
	}
});

// ----------------------------------------------------------------------------------- run

/** True while any of the sessions' work is unfinished (what the drain waits for). */
async function inFlight(sql: postgres.Sql, sessionIds: string[]): Promise<boolean> {
	const [r] = await sql<{ n: number }[]>`
		select (
			(select count(*) from messages where session_id = any(${sessionIds}::uuid[]) and status in ('queued', 'streaming')) +
			(select count(*) from executions where requested_by_session = any(${sessionIds}::uuid[]) and status in ('approved', 'running')) +
			(select count(*) from execution_sessions l join executions e on e.id = l.execution_id
			 where l.session_id = any(${sessionIds}::uuid[]) and l.continued_at is null and e.finished_at is not null)
		)::int as n`;
	return r.n > 0;
}

async function main(): Promise<void> {
	const t0 = Date.now();
	const killPlan = SLOW_HOST
		? `no kills (slow host: +${SLOW_HOST} s per command)`
		: `kill every ${KILL_MIN / 1000}–${KILL_MAX / 1000} s (SIGTERM share ${SIGTERM_SHARE})`;
	log(`${WEB} web + ${WORKERS} worker processes, ${SESSIONS} sessions, ${RUN_MS / 1000} s, ${killPlan}, seed ${SEED}`);
	log(`${os.cpus().length} CPUs, load average ${loadAverage()}`);
	const build = spawnSync(process.execPath, ['scripts/ensure-build.js'], { cwd: ROOT, encoding: 'utf8' });
	if (build.status !== 0) throw new Error(`the build failed:\n${build.stdout}${build.stderr}`);
	if (build.stdout.trim()) log(`built the app in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

	tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-bench-chaos-'));
	await fs.chmod(tmp, 0o755); // Postgres runs as its own user when we are root
	const logDir = path.join(tmp, 'logs');
	await fs.mkdir(logDir);
	pg = await benchPostgres(path.join(tmp, 'pg'));

	const seed: SeedCt[] = Array.from({ length: SESSIONS * BASE_GENERATIONS }, (_, n) => {
		const vmid = vmidOf(BASE_VMID, n % SESSIONS, Math.floor(n / SESSIONS));
		return { vmid, hostname: `base-${vmid}`, status: 'running' };
	});
	const pve = await startDouble<ProxmoxDoubleInfo>(
		'Proxmox double',
		['tests/doubles/proxmox/cli.ts', '--port', String(await benchPort()), '--node', 'strong', '--seed', JSON.stringify(seed)],
		{
			env: { PVE_DOUBLE_DELAY_MS: '50' }
		}
	);
	doubles.push(pve.child);
	const llm = await startDouble<{ baseURL: string }>('LLM double', ['tests/doubles/llm/cli.ts', '--port', String(await benchPort())]);
	doubles.push(llm.child);
	await llmControl(llm.info.baseURL).fallback(MODEL_RULES);

	db = postgres(pg.url, { max: 4, onnotice: () => undefined });
	const sql = db;
	const kills = new Random(SEED);
	const owners = new JobOwners();
	const choices = new Random(SEED + 1);
	fleet = new Fleet({
		web: WEB,
		worker: WORKERS,
		ports: await Promise.all(Array.from({ length: WEB }, () => benchPort())),
		logDir,
		random: new Random(SEED + 2),
		restartDelay: [RESTART_MIN, RESTART_MAX],
		stopTimeoutMs: STOP_TIMEOUT_MS,
		onLine: (pid, line) => owners.line(pid, line),
		workerReady: async (pid) => (await sql`select 1 from worker_processes where pid = ${pid} and hostname = ${os.hostname()}`.catch(() => [])).length > 0,
		log,
		env: {
			...process.env,
			DATABASE_URL: pg.url,
			NOMOS_DATA_DIR: path.join(tmp, 'data'),
			NOMOS_HOSTS: JSON.stringify([
				{
					name: 'strong',
					address: '127.0.0.1',
					port: pve.info.port,
					user: 'root',
					keyPath: pve.info.clientKeyPath,
					hostKeyFingerprint: pve.info.hostKeyFingerprint
				}
			]),
			OPENAI_BASE_URL: llm.info.baseURL,
			OPENAI_API_KEY: 'chaos',
			NOMOS_MODEL: 'scripted',
			NOMOS_OPERATOR_USERNAME: OPERATOR.username,
			NOMOS_OPERATOR_PASSWORD: OPERATOR.password,
			NOMOS_KNOWLEDGE_DIR: '',
			// The cap on automatic continuations per approval window is a deliberate stop, not a
			// fault: lifted, so a long run's loops measure faults only.
			NOMOS_MAX_CONTINUATIONS: '1000000',
			// graphile-worker's "Found task <id>" lines (debug) say which process took which job.
			NOMOS_LOG_LEVEL: 'debug'
		}
	});
	await fleet.start();
	log(`fleet up in ${((Date.now() - t0) / 1000).toFixed(1)} s since start; temp dir ${tmp}`);

	const cookie = await signIn(fleet.webBases()[0], OPERATOR.username, OPERATOR.password);
	const operator = new Operator(cookie, () => fleet!.webBases(), choices, OPERATOR.password);
	const truth = new TruthLedger(pve.info.stateDir);
	const ctx = { db: sql, operator, random: choices, truth, patienceMs: PATIENCE_MS, thinkMs: [500, 2000] as [number, number], log };
	const sessionIds = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => openSession(ctx, i)));

	if (SLOW_HOST > 0) return slowHostMode(ctx, sql, pve.info.stateDir, sessionIds, t0);

	// ------------------------------------------------------------------ the chaos window
	const groups: CpuGroups = {
		all: { pid: process.pid, tree: true },
		postgres: { pid: pg.pid, tree: true },
		pve: { pid: pve.child.pid!, tree: true },
		llm: { pid: llm.child.pid!, tree: true }
	};
	const cpu0 = readCpu(groups);
	const self0 = process.cpuUsage();
	const start = Date.now();
	const runEnd = start + RUN_MS;
	const hardEnd = runEnd + DRAIN_MS;
	let stopping = false;
	const records: LoopRecord[] = [];
	const works: KillWork[] = [];
	const watch = new JobWatch();
	log(`chaos for ${RUN_MS / 1000} s…`);

	const loops = sessionIds.map((id, i) =>
		runSession(
			ctx,
			i,
			id,
			() => stopping,
			() => hardEnd,
			records
		)
	);
	const killer = (async () => {
		for (;;) {
			const at = Date.now() + kills.between(KILL_MIN, KILL_MAX);
			while (Date.now() < Math.min(at, runEnd)) await sleep(100);
			if (Date.now() >= runEnd) return;
			const signal: NodeJS.Signals = kills.next() < SIGTERM_SHARE ? 'SIGTERM' : 'SIGKILL';
			const live = fleet.live();
			const victim = live.length ? kills.pick(live) : undefined;
			if (!victim) continue;
			const work = await snapshotWork(sql, victim.child!.pid!, owners);
			const kill = fleet.kill(victim, signal);
			const w = { kill, ...work };
			works.push(w);
			watch.add(w);
			log(
				`${signal} ${victim.name} (pid ${kill.pid}) at ${((kill.at - start) / 1000).toFixed(0)} s: ${work.pieces.length ? work.pieces.map((p) => p.task).join(', ') : 'no jobs in flight'}`
			);
		}
	})();
	let watching = true;
	const watcher = (async () => {
		let lastLog = Date.now();
		while (watching) {
			await watch.poll(sql).catch((e: Error) => log(`job watch: ${e.message}`));
			await owners.learn(sql).catch((e: Error) => log(`job owners: ${e.message}`));
			if (Date.now() - lastLog > 30_000) {
				lastLog = Date.now();
				const done = records.filter((r) => r.outcome === 'completed').length;
				log(
					`${((Date.now() - start) / 1000).toFixed(0)} s: ${fleet.kills.length} kills, ${done}/${records.length} loops completed, ${fleet.live().length}/${WEB + WORKERS} processes up, load ${loadAverage()}`
				);
			}
			await sleep(250);
		}
	})();

	await killer;
	stopping = true;
	log(`no more kills; letting the loops finish and the system settle (≤ ${DRAIN_MS / 1000} s)…`);
	await Promise.all(loops);
	while (Date.now() < hardEnd && (!fleet.fullyUp() || (await inFlight(sql, sessionIds)))) await sleep(500);
	const settled = !(await inFlight(sql, sessionIds));
	watching = false;
	await watcher;
	const end = Date.now();
	const cpu1 = readCpu(groups);
	const self1 = process.cpuUsage(self0);

	// ------------------------------------------------------------------------- figures
	await resolveWork(sql, works);
	await settleFinal(sql, truth, records);
	const figures = await measure(sql, sessionIds, records, pve.info.stateDir);
	printReport({
		web: WEB,
		workers: WORKERS,
		sessions: SESSIONS,
		seed: SEED,
		runMs: RUN_MS,
		wallMs: end - t0,
		chaosMs: end - start,
		settled,
		records,
		works,
		fleet,
		operatorUnreachable: operator.unreachable,
		figures,
		untruths: truth.untruths,
		cpu:
			cpu0 && cpu1
				? {
						wall: (cpu1.at - cpu0.at) / 1000,
						machine: cpu1.total - cpu0.total,
						...Object.fromEntries(Object.keys(groups).map((k) => [k, cpu1.groups[k] - cpu0.groups[k]])),
						self: (self1.user + self1.system) / 1e6
					}
				: null
	});
}

/** `--slow-host N`: every host command +N s, no kills; plan loops; plans completed and false "absent" statements. */
async function slowHostMode(ctx: Parameters<typeof runPlanLoops>[0], sql: postgres.Sql, stateDir: string, sessionIds: string[], t0: number): Promise<void> {
	await slowTheHost(stateDir, SLOW_HOST);
	log(`slow host: every host command +${SLOW_HOST} s; NOMOS_HOST_WAIT_MIN ${process.env.NOMOS_HOST_WAIT_MIN ?? '5 (default)'}; plans for ${RUN_MS / 1000} s…`);
	const runEnd = Date.now() + RUN_MS;
	const hardEnd = runEnd + DRAIN_MS;
	const records: PlanRecord[] = [];
	await Promise.all(
		sessionIds.map((id, i) =>
			runPlanLoops(
				ctx,
				stateDir,
				i,
				id,
				() => Date.now() >= runEnd,
				() => hardEnd,
				records
			)
		)
	);
	while (Date.now() < hardEnd && (await inFlight(sql, sessionIds))) await sleep(500);
	const settled = !(await inFlight(sql, sessionIds));
	const absent = await measureAbsent(sql, sessionIds, stateDir);
	printSlowHostReport({ seconds: SLOW_HOST, sessions: SESSIONS, runMs: Date.now() - t0, records, absent, settled });
}

let code = 1;
try {
	await main();
	code = 0;
} catch (e) {
	// fetch's "fetch failed" says why only in its cause (refused, reset, a timeout).
	const cause = (e as Error).cause as Error | undefined;
	console.error(`[chaos] failed: ${(e as Error).stack ?? String(e)}${cause ? `\n  cause: ${cause.stack ?? cause.message}` : ''}`);
	if (tmp) console.error(`[chaos] process logs: ${path.join(tmp, 'logs')} (kept with --keep)`);
} finally {
	await cleanup();
}
process.exit(code);
