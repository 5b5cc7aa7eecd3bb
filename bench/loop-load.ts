// `npm run bench:loop` part 2 — the approval loop under concurrency (issue #15, "latency the operator
// feels"): approve → the execution runs → the agent's reply is there, for many sessions at once.
//
//   1. starts its own embedded Postgres in a temp dir, the SSH Proxmox double (node `strong`,
//      BENCH_CTS seeded containers) and the scripted LLM double (a fallback answers every turn
//      with a short text), each as a child process, as they would be other machines;
//   2. boots a worker in this process as `npm run worker` does — boot('worker', { taskList }) with
//      DATABASE_URL, NOMOS_HOSTS (the double, pinned), NOMOS_WORKER_CONCURRENCY, and
//      NOMOS_INVENTORY_SYNC on, so the minute's sync and the follow-up syncs compete as in
//      production — and waits for the first inventory sync;
//   3. opens --sessions sessions, each requesting a pct_create of a new container through
//      requestExecution (as the agent's tool does), then approves all of them at once through
//      operatorDecides (the UI's decision, which opens the session's assent window);
//   4. waits until every session has its continuation reply (the assistant message with origin
//      'continuation', complete), then until the inventory queue is empty, and prints per-session
//      intervals from the database (p50 / p95 / max), where the time goes (job waits and runs,
//      the execution's parts), and counts: inventory syncs, SSH commands, model requests.
//
// Exits non-zero on errors only (an approval refused, an execution lost, failed or run twice, a
// reply missing or doubled), not on slowness. Stops everything and removes its temp dir at the end
// and on Ctrl-C.
//
//   npm run bench:loop -- --sessions 20 --concurrency 4
// Options: --sessions N (20)  --concurrency C (4, NOMOS_WORKER_CONCURRENCY)  --lane L (NOMOS_EXECUTION_CONCURRENCY)
//          --doubles-nice N (0: the doubles' nice level; 19 lets them use only CPU Nomos leaves over)
//          --timeout S (600: replies) --drain-timeout S (600: inventory queue after the last reply)
// Env:     BENCH_CTS (10 seeded containers)  BENCH_PVE_DELAY_MS (50: the double's delay between
//          pct create's progress lines, ≈ 1 s per create)  BENCH_VERBOSE=1 (graphile-worker's job log)
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Task, TaskList } from 'graphile-worker';
import { boot, type Runtime } from '../src/lib/server/boot';
import { sql } from '../src/lib/server/db/index';
import type { EmbeddedPostgres } from '../src/lib/server/db/embedded';
import { insertMessage } from '../src/lib/server/db/queries/messages';
import { credentialsByUsername } from '../src/lib/server/db/queries/operators';
import { createSession } from '../src/lib/server/db/queries/sessions';
import { env, resetEnvCache } from '../src/lib/server/env';
import { operatorDecides } from '../src/lib/server/executions/decisions';
import { requestExecution } from '../src/lib/server/executions/request';
import type { ExecutionStep } from '../src/lib/types/executions';
import { taskList } from '../tasks/index';
import { llmControl } from '../tests/doubles/llm/client';
import { readArgvLog, readContainers, type SeedCt } from '../tests/doubles/proxmox/state';
import { cpuTable, readCpu, type CpuGroups } from './cpu-share';
import { benchPort, benchPostgres, exitCleanly, loadAverage, ms, ROOT, sleep, startDouble as startDoubleProcess, stats, stopChild } from './harness';

process.chdir(ROOT);

const { values: opts } = parseArgs({
	options: {
		sessions: { type: 'string', default: '20' },
		concurrency: { type: 'string', default: '4' },
		lane: { type: 'string' },
		'doubles-nice': { type: 'string', default: '0' },
		timeout: { type: 'string', default: '600' },
		'drain-timeout': { type: 'string', default: '600' }
	},
	// bench/loop.ts hands the same arguments to both parts.
	strict: false
});
const positive = (name: string, raw: string | boolean | undefined): number => {
	const n = Number(raw);
	if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${raw}`);
	return n;
};
const SESSIONS = positive('--sessions', opts.sessions);
const CONCURRENCY = positive('--concurrency', opts.concurrency);
/** NOMOS_EXECUTION_CONCURRENCY: from --lane, else the environment's, else the app's default. */
const LANE = opts.lane === undefined ? undefined : positive('--lane', opts.lane);
/**
 * The doubles' scheduling priority (0 … 19). They stand in for other machines (the Proxmox host,
 * the model server); niced, they take only CPU that Nomos and Postgres leave over, as another
 * machine's work would take none of this one's.
 */
const DOUBLES_NICE = Number(opts['doubles-nice']);
if (!Number.isInteger(DOUBLES_NICE) || DOUBLES_NICE < 0 || DOUBLES_NICE > 19) throw new Error(`--doubles-nice must be 0 … 19, got ${opts['doubles-nice']}`);
const TIMEOUT_MS = positive('--timeout', opts.timeout) * 1000;
const DRAIN_TIMEOUT_MS = positive('--drain-timeout', opts['drain-timeout']) * 1000;
const CTS = positive('BENCH_CTS', process.env.BENCH_CTS ?? '10');
const PVE_DELAY_MS = Number(process.env.BENCH_PVE_DELAY_MS ?? 50);
const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';
const FIRST_NEW_VMID = 1000;
const OPERATOR = { username: 'bench', password: 'bench-password-1234' };

const log = (s: string) => console.log(`[bench] ${s}`);
const at = (iso: string) => Date.parse(iso);

// ---------------------------------------------------------------- process bookkeeping / cleanup

const children = new Set<ChildProcess>();
/** The doubles' pids by name, for the CPU table. */
const childPids: Record<string, number> = {};
let tmp: string | undefined;
let pg: EmbeddedPostgres | undefined;
let runtime: Runtime | undefined;
const cleanup = exitCleanly({
	log,
	pg: () => pg,
	stop: async () => {
		await runtime?.shutdown().catch((e: Error) => log(`stopping the worker: ${e.message}`));
		await Promise.all([...children].map((c) => stopChild(c)));
		await pg?.stop().catch((e: Error) => log(`stopping Postgres: ${e.message}`));
		if (tmp) await fs.rm(tmp, { recursive: true, force: true });
	},
	// Last resort if we die without cleanup(): no orphans.
	kill: () => {
		for (const c of children) c.kill('SIGKILL');
	}
});

/** Starts a double as a child process (kept for cleanup and the CPU table); returns what it printed. */
async function startDouble<T>(name: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<T> {
	const { child, info } = await startDoubleProcess<T>(name, args, { env, nice: DOUBLES_NICE });
	children.add(child);
	child.once('exit', () => children.delete(child));
	if (child.pid) childPids[name] = child.pid;
	return info;
}

// ------------------------------------------------------------------------------ measuring

/** One job as the worker ran it: when it was due (run_at, i.e. queued or replaced), started, ended. */
type JobRun = { task: string; id: string; payload: Record<string, unknown>; revision: number; dueAt: number; startAt: number; endAt: number };
const jobRuns: JobRun[] = [];

/** The app's tasks, each timed (nothing else changes: same functions, same queues and keys). */
function timed(list: TaskList): TaskList {
	const out: TaskList = {};
	for (const [name, task] of Object.entries(list)) {
		if (!task) continue;
		const wrapped: Task = async (payload, helpers) => {
			const startAt = Date.now();
			try {
				return await task(payload, helpers);
			} finally {
				jobRuns.push({
					task: name,
					id: helpers.job.id,
					payload: (payload ?? {}) as Record<string, unknown>,
					revision: helpers.job.revision,
					dueAt: helpers.job.run_at.getTime(),
					startAt,
					endAt: Date.now()
				});
			}
		};
		out[name] = wrapped;
	}
	return out;
}

async function inventoryQueueLength(): Promise<number> {
	const [r] = await sql()<{ n: number }[]>`
		select count(*)::int as n
		from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
		where t.identifier = 'inventory__sync'`;
	return r.n;
}

type ExecRow = {
	id: string;
	session: string;
	vmid: string;
	status: string;
	error: string | null;
	approvedAt: string | null;
	startedAt: string | null;
	finishedAt: string | null;
	steps: ExecutionStep[];
};
type ReplyRow = { session: string; status: string; createdAt: string; updatedAt: string };

async function readExecutions(sessionIds: string[]): Promise<ExecRow[]> {
	return sql()<ExecRow[]>`
		select id, requested_by_session as session, params ->> 'vmid' as vmid, status, error,
			approved_at as "approvedAt", started_at as "startedAt", finished_at as "finishedAt", steps
		from executions where requested_by_session = any(${sessionIds}::uuid[])`;
}

async function readReplies(sessionIds: string[]): Promise<ReplyRow[]> {
	return sql()<ReplyRow[]>`
		select session_id as session, status, created_at as "createdAt", updated_at as "updatedAt"
		from messages
		where session_id = any(${sessionIds}::uuid[]) and role = 'assistant' and origin = 'continuation'`;
}

// ------------------------------------------------------------------------------------ run

async function main(): Promise<number> {
	const errors: string[] = [];
	if (!process.env.BENCH_VERBOSE) console.info = () => undefined; // graphile-worker's line per job
	log(`sessions ${SESSIONS}, concurrency ${CONCURRENCY}, seeded CTs ${CTS}; ${os.cpus().length} CPUs, load average ${loadAverage()}`);

	tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-bench-loop-'));
	pg = await benchPostgres(tmp);
	log(`embedded Postgres in ${tmp}`);

	const seed: SeedCt[] = Array.from({ length: CTS }, (_, i) => ({ vmid: 100 + i, hostname: `seed-${100 + i}`, status: i % 3 === 2 ? 'stopped' : 'running' }));
	const pve = await startDouble<{ port: number; clientKeyPath: string; hostKeyFingerprint: string; stateDir: string }>(
		'Proxmox double',
		['tests/doubles/proxmox/cli.ts', '--port', String(await benchPort()), '--node', 'strong', '--seed', JSON.stringify(seed)],
		{ PVE_DOUBLE_DELAY_MS: String(PVE_DELAY_MS) }
	);
	const llmInfo = await startDouble<{ baseURL: string }>('LLM double', ['tests/doubles/llm/cli.ts', '--port', String(await benchPort())]);
	const llm = llmControl(llmInfo.baseURL);
	await llm.fallback([{ respond: { text: 'Checked: the new container is created and running.' } }]);

	Object.assign(process.env, {
		DATABASE_URL: pg.url,
		NOMOS_WORKER: 'on',
		NOMOS_WORKER_CONCURRENCY: String(CONCURRENCY),
		...(LANE ? { NOMOS_EXECUTION_CONCURRENCY: String(LANE) } : {}),
		NOMOS_INVENTORY_SYNC: 'on',
		NOMOS_HOSTS: JSON.stringify([
			{ name: 'strong', address: '127.0.0.1', port: pve.port, user: 'root', keyPath: pve.clientKeyPath, hostKeyFingerprint: pve.hostKeyFingerprint }
		]),
		NOMOS_OPERATOR_USERNAME: OPERATOR.username,
		NOMOS_OPERATOR_PASSWORD: OPERATOR.password,
		NOMOS_KNOWLEDGE_DIR: '',
		OPENAI_BASE_URL: llmInfo.baseURL,
		OPENAI_API_KEY: 'bench',
		NOMOS_MODEL: 'scripted'
	});
	resetEnvCache();
	runtime = await boot('worker', { taskList: timed(taskList) });

	// The boot's first inventory sync, before the load (it is not what this measures).
	const ready = Date.now() + 120_000;
	for (;;) {
		const [r] = await sql()<{ n: number }[]>`select count(*)::int as n from entities where kind = 'lxc'`;
		if (r.n === CTS && (await inventoryQueueLength()) === 0) break;
		if (Date.now() > ready) throw new Error(`the first inventory sync did not finish within 120 s (${r.n}/${CTS} containers)`);
		await sleep(100);
	}
	const operator = await credentialsByUsername(sql(), OPERATOR.username);
	if (!operator) throw new Error('the configured operator was not created');

	// Sessions, each with the operator's words and the agent's pct_create request waiting.
	const sessions: { id: string; executionId: string; vmid: number }[] = [];
	for (let i = 0; i < SESSIONS; i++) {
		const vmid = FIRST_NEW_VMID + i;
		const hostname = `bench-${i}`;
		const id = await sql().begin(async (tx) => {
			const sessionId = await createSession(tx, operator.id, `bench ${i}`);
			await insertMessage(tx, {
				sessionId,
				role: 'user',
				parts: [{ type: 'text', text: `create a Debian container ${hostname} (CT ${vmid}) on strong` }],
				status: 'complete',
				origin: 'chat'
			});
			return sessionId;
		});
		const r = await requestExecution(id, {
			target: 'strong',
			action: 'pct_create',
			params: { vmid, hostname, template: TEMPLATE },
			reason: `bench session ${i}`
		});
		if ('error' in r) throw new Error(`requestExecution: ${r.error}`);
		if (r.execution.status !== 'awaiting_approval') throw new Error(`expected awaiting_approval, got ${r.execution.status}`);
		sessions.push({ id, executionId: r.execution.id, vmid });
	}
	const ids = sessions.map((s) => s.id);

	const argv0 = (await readArgvLog(pve.stateDir)).length;
	const llm0 = (await llm.state()).requestCount;
	const [{ maxEvent }] = await sql()<{ maxEvent: number }[]>`select coalesce(max(id), 0)::float8 as "maxEvent" from events`;
	jobRuns.length = 0;
	const load0 = loadAverage();
	const cpuGroups: CpuGroups = {
		'Nomos worker (this process)': { pid: process.pid, tree: false },
		'Postgres (all backends)': { pid: pg.pid, tree: true },
		'Proxmox SSH double': { pid: childPids['Proxmox double'], tree: true },
		'LLM double': { pid: childPids['LLM double'], tree: true }
	};
	const cpu0 = readCpu(cpuGroups);

	// All approvals at once, each in its own transaction, as the approve button's route does.
	log(`approving ${SESSIONS} executions at once…`);
	const fired = Date.now();
	const decisions = await Promise.all(
		sessions.map((s) =>
			sql().begin((tx) =>
				operatorDecides(tx, s.executionId, {
					decision: 'approved',
					route: 'button',
					operatorId: operator.id,
					credential: { kind: 'session', verifiedAt: new Date().toISOString() }
				})
			)
		)
	);
	decisions.forEach((d, i) => {
		if (!d.ok) errors.push(`session ${i}: approval refused (${d.reason})`);
	});

	// Every session's continuation reply, complete (or finished otherwise: error, cancelled).
	let replies: ReplyRow[] = [];
	let lastProgress = 0;
	for (;;) {
		replies = await readReplies(ids);
		const settled = replies.filter((r) => r.status !== 'streaming' && r.status !== 'queued').length;
		if (settled >= SESSIONS) break;
		if (Date.now() - fired > TIMEOUT_MS) {
			errors.push(`${SESSIONS - settled} of ${SESSIONS} sessions had no finished continuation reply after ${TIMEOUT_MS / 1000} s`);
			break;
		}
		if (Date.now() - lastProgress > 15_000) {
			lastProgress = Date.now();
			log(`  ${settled}/${SESSIONS} replies after ${((Date.now() - fired) / 1000).toFixed(0)} s`);
		}
		await sleep(100);
	}
	const repliesDone = Date.now();
	const cpu1 = readCpu(cpuGroups);
	log(`replies: ${replies.length}/${SESSIONS} in ${((repliesDone - fired) / 1000).toFixed(1)} s; waiting for the inventory queue to empty…`);

	// Then the follow-up syncs (and any minute's sync that came in between) until none is left.
	let drainedAt: number | null = null;
	while (Date.now() - repliesDone < DRAIN_TIMEOUT_MS) {
		if ((await inventoryQueueLength()) === 0) {
			drainedAt = Date.now();
			break;
		}
		await sleep(100);
	}
	const queueLeft = drainedAt === null ? await inventoryQueueLength() : 0;
	const load1 = loadAverage();

	// ------------------------------------------------------------------ figures from the database
	const execs = await readExecutions(ids);
	replies = await readReplies(ids);
	const argv = (await readArgvLog(pve.stateDir)).slice(argv0);
	const llmRequests = (await llm.state()).requestCount - llm0;
	const containers = new Set((await readContainers(pve.stateDir)).map((c) => c.vmid));
	const events = await sql()<{ container: number | null }[]>`
		select (payload ->> 'container')::int as container from events where id > ${maxEvent} and type = 'inventory.synced'`;

	for (const [i, s] of sessions.entries()) {
		const mine = execs.filter((e) => e.session === s.id);
		if (mine.length !== 1) errors.push(`session ${i}: ${mine.length} executions`);
		const e = mine[0];
		if (e && e.status !== 'succeeded') errors.push(`session ${i}: execution ${e.status}${e.error ? `: ${e.error}` : ''}`);
		const creates = argv.filter((a) => a[0] === 'pct' && a[1] === 'create' && a[2] === String(s.vmid)).length;
		if (creates !== 1) errors.push(`session ${i}: pct create ${s.vmid} ran ${creates} times`);
		if (e?.status === 'succeeded' && !containers.has(s.vmid)) errors.push(`session ${i}: CT ${s.vmid} is not on the host`);
		const r = replies.filter((x) => x.session === s.id);
		if (r.length > 1) errors.push(`session ${i}: ${r.length} continuation replies`);
		if (r.length === 1 && r[0].status !== 'complete') errors.push(`session ${i}: continuation reply ${r[0].status}`);
	}

	const continuationJobs = new Map(jobRuns.filter((j) => j.task === 'agent__continue_session').map((j) => [j.payload.sessionId as string, j]));
	const per = sessions.map((s) => {
		const e = execs.find((x) => x.session === s.id);
		const r = replies.find((x) => x.session === s.id && x.status === 'complete');
		const job = continuationJobs.get(s.id);
		const step = e?.steps.find((x) => x.label.startsWith('pct create'));
		const t = (iso: string | null | undefined) => (iso ? at(iso) : NaN);
		return {
			approvedToStarted: t(e?.startedAt) - t(e?.approvedAt),
			startedToFinished: t(e?.finishedAt) - t(e?.startedAt),
			finishedToReply: t(r?.updatedAt) - t(e?.finishedAt),
			approvedToReply: t(r?.updatedAt) - t(e?.approvedAt),
			// parts of started → finished
			connectAndCheck: t(step?.startedAt) - t(e?.startedAt),
			create: t(step?.finishedAt) - t(step?.startedAt),
			record: t(e?.finishedAt) - t(step?.finishedAt),
			// parts of finished → reply
			continuationWait: (job?.startAt ?? NaN) - t(e?.finishedAt),
			beforeTurn: t(r?.createdAt) - (job?.startAt ?? NaN),
			turn: t(r?.updatedAt) - t(r?.createdAt),
			replyAt: t(r?.updatedAt)
		};
	});
	const lastReply = Math.max(...per.map((p) => p.replyAt).filter(Number.isFinite));
	const drainMs = drainedAt === null ? NaN : Math.max(0, drainedAt - lastReply);

	// ------------------------------------------------------------------------------- printing
	const rows: [string, number[]][] = [
		['approved → started', per.map((p) => p.approvedToStarted)],
		['started → finished', per.map((p) => p.startedToFinished)],
		['  SSH connect + pct status check', per.map((p) => p.connectAndCheck)],
		['  pct create', per.map((p) => p.create)],
		['  recording the finish', per.map((p) => p.record)],
		['finished → reply complete', per.map((p) => p.finishedToReply)],
		['  continuation job waits for a slot', per.map((p) => p.continuationWait)],
		['  job start → turn starts (refresh)', per.map((p) => p.beforeTurn)],
		['  the model turn', per.map((p) => p.turn)],
		['approved → reply complete', per.map((p) => p.approvedToReply)]
	];
	const w = Math.max(...rows.map(([name]) => name.length));
	console.log('');
	console.log(
		`Approval loop: ${SESSIONS} sessions, worker concurrency ${CONCURRENCY}, execution lane ${env().NOMOS_EXECUTION_CONCURRENCY}, doubles at nice ${DOUBLES_NICE}, ${CTS} seeded CTs (+${SESSIONS} created), pct create ≈ ${PVE_DELAY_MS} ms × 20 lines`
	);
	console.log(`${os.cpus().length} CPUs; load average ${load0} before, ${load1} after`);
	console.log('');
	console.log(`| ${'per session (ms)'.padEnd(w)} |    n |    p50 |    p95 |    max |`);
	console.log(`|:${'-'.repeat(w + 1)}|-----:|-------:|-------:|-------:|`);
	for (const [name, xs] of rows) {
		const s = stats(xs);
		console.log(`| ${name.padEnd(w)} | ${String(s.n).padStart(4)} | ${ms(s.p50).padStart(6)} | ${ms(s.p95).padStart(6)} | ${ms(s.max).padStart(6)} |`);
	}

	console.log('');
	console.log(`| ${'jobs during the run'.padEnd(24)} | jobs | wait p50 | wait p95 | run p50 | run p95 | run max |`);
	console.log(`|:${'-'.repeat(25)}|-----:|---------:|---------:|--------:|--------:|--------:|`);
	for (const task of [...new Set(jobRuns.map((j) => j.task))].sort()) {
		const js = jobRuns.filter((j) => j.task === task);
		const wait = stats(js.map((j) => j.startAt - j.dueAt));
		const run = stats(js.map((j) => j.endAt - j.startAt));
		console.log(
			`| ${task.padEnd(24)} | ${String(js.length).padStart(4)} | ${ms(wait.p50).padStart(8)} | ${ms(wait.p95).padStart(8)} | ${ms(run.p50).padStart(7)} | ${ms(run.p95).padStart(7)} | ${ms(run.max).padStart(7)} |`
		);
	}

	const syncs = jobRuns.filter((j) => j.task === 'inventory__sync');
	const cronSyncs = syncs.filter((j) => '_cron' in j.payload).length;
	const added = syncs.reduce((n, j) => n + 1 + j.revision, 0);
	const byCommand = new Map<string, number>();
	for (const a of argv) {
		const k = a[0] === 'pvesh' ? `pvesh get ${a[2]?.replace(/^\/nodes\/[^/]+\//, '/nodes/*/')}` : a.slice(0, 2).join(' ');
		byCommand.set(k, (byCommand.get(k) ?? 0) + 1);
	}
	const fullSyncs = argv.filter((a) => a[0] === 'pvesh' && a[2] === '/nodes').length;
	console.log('');
	console.log(
		`inventory__sync jobs: ${syncs.length} run (${cronSyncs} by the minute's cron) for ${added} adds (new jobs + replacements of a pending one by its job key)`
	);
	console.log(
		`full host syncs (pvesh get /nodes): ${fullSyncs}; single-container refreshes: ${events.filter((e) => e.container !== null).length}; inventory.synced events: ${events.length}`
	);
	console.log(
		`SSH commands on the double: ${argv.length} (${[...byCommand]
			.sort((a, b) => b[1] - a[1])
			.map(([k, n]) => `${k} ×${n}`)
			.join(', ')})`
	);
	console.log(`model requests: ${llmRequests} for ${SESSIONS} continuation turns`);
	console.log(`approvals fired → last reply: ${ms(lastReply - fired)} ms`);
	console.log(
		drainedAt === null
			? `inventory queue: ${queueLeft} job(s) still there ${DRAIN_TIMEOUT_MS / 1000} s after the replies`
			: `last reply → inventory queue empty: ${ms(drainMs)} ms`
	);
	console.log('');
	// Every part runs on this machine; in a homelab the host and the model server are others.
	const cpuRows = cpuTable(cpu0, cpu1);
	if (cpuRows.length) {
		console.log(`Approvals fired → last reply, ${cpuRows[0]}`);
		for (const r of cpuRows.slice(1)) console.log(r);
		console.log('');
	}
	if (errors.length) {
		for (const e of errors.slice(0, 20)) console.error(`error: ${e}`);
		if (errors.length > 20) console.error(`… and ${errors.length - 20} more`);
		return 1;
	}
	log(`ok: ${SESSIONS} executions ran once each, ${SESSIONS} replies, none lost or doubled`);
	return 0;
}

let code = 1;
try {
	code = await main();
} catch (e) {
	console.error(`[bench] failed: ${(e as Error).stack ?? String(e)}`);
} finally {
	await cleanup();
}
process.exit(code);
