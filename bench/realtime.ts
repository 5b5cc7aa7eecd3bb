// `npm run bench:realtime` — live-update latency and cost of Nomos's SSE, next to a bare
// node:http + LISTEN reference and the old 3-second polling, all in one run on one database.
//
//   1. builds the app if build/ is stale (scripts/ensure-build.js);
//   2. starts ONE embedded Postgres under bench/.tmp-<pid>/ (under bench:smoke: its own database on the
//      smoke's server, harness.ts benchPostgres) and migrates it (runMigrations, as the app boots);
//   3. for each N (100, 1000) and each system — Nomos (`node server.js`), the bare reference
//      (bench/bare-sse-server.ts), polling (bench/poll-server.ts) — starts the server as a fresh
//      child process, opens N clients from separate processes (bench/sse-clients.ts), commits
//      RATE events/s for SECONDS s from this process (advisory lock + insert, like emitEvent) and
//      measures:
//      - latency: client receipt − commit (taken when COMMIT returned), both CLOCK_MONOTONIC;
//      - deliveries/s: deliveries / (first commit → last receipt); lost/dup/out-of-order per
//        client against the table;
//      - KB/stream 0→N: server RSS with N streams − RSS with none, after a 20-stream warm-up,
//        each read 2 s after the connections settled (no forced GC);
//        KB/stream N→2N: RSS growth when N more streams are opened on top (then closed again) —
//        the marginal cost, without one-off growth such as V8's young generation becoming resident;
//      - CPU/delivery: server utime+stime over the event phase / deliveries;
//      - polling: requests/s while idle, then the same event phase;
//   4. prints one table and a verdict per N; stops everything and removes the temp dir (also on
//      Ctrl-C and on the 290 s watchdog).
//
// Knobs (env): BENCH_SIZES=100,1000  BENCH_RATE=20  BENCH_SECONDS=10  BENCH_SYSTEMS=nomos,bare,poll  BENCH_POLL_MS=3000
//              BENCH_CLIENT_PROCS (default: one client process per 500 connections)
//              BENCH_NICE=-10 (run everything at that niceness: steadier figures on a busy machine)
//              BENCH_NOMOS_DIR (run Nomos from another checkout with its own build/, to compare)
// Debugging:   BENCH_NODE_ARGS / BENCH_NOMOS_NODE_ARGS (extra node flags for all servers / Nomos
//              only, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), BENCH_HOLD_MS (keep the streams
//              open after a run, e.g. for a heap snapshot), BENCH_SERVER_LOG=file (servers' output),
//              BENCH_DUMP=prefix (raw client reports as JSON), BENCH_SETTLE_MS, BENCH_DEADLINE_MS
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, getPriority, loadavg, setPriority } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import type { EmbeddedPostgres } from '../src/lib/server/db/embedded';
import { runMigrations } from '../src/lib/server/db/migrate';
import { freePort } from '../tests/helpers/ports';
import { benchPostgres } from './harness';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(ROOT);

const SIZES = (process.env.BENCH_SIZES ?? '100,1000')
	.split(',')
	.map(Number)
	.filter((n) => n > 0);
const RATE = Number(process.env.BENCH_RATE ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const SYSTEMS = (process.env.BENCH_SYSTEMS ?? 'nomos,bare,poll').split(',') as System[];
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 3000);
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 2000);
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_MS ?? 290_000);
const OPERATOR = { username: 'bench', password: 'bench-password-1234' };
const CLK_TCK = (() => {
	try {
		return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
	} catch {
		return 100;
	}
})();

type System = 'nomos' | 'bare' | 'poll';
const LABEL: Record<System, string> = { nomos: 'Nomos SSE', bare: 'bare reference', poll: `polling ${POLL_MS / 1000} s` };

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6; // CLOCK_MONOTONIC, shared by all processes
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.log(`[bench] ${msg}`);

// ---------------------------------------------------------------- process bookkeeping / cleanup

const tmp = path.join(ROOT, 'bench', `.tmp-${process.pid}`);
const children = new Set<ChildProcess>();
let pg: EmbeddedPostgres | undefined;
let producer: postgres.Sql | undefined;
let cleaning: Promise<void> | undefined;

function track(child: ChildProcess): ChildProcess {
	children.add(child);
	child.once('exit', () => children.delete(child));
	return child;
}

async function killChild(child: ChildProcess): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null) return;
	const exited = new Promise<void>((r) => child.once('exit', () => r()));
	child.kill('SIGTERM');
	if (await Promise.race([exited.then(() => true), sleep(3000).then(() => false)])) return;
	child.kill('SIGKILL');
	await Promise.race([exited, sleep(1000)]);
}

function cleanup(): Promise<void> {
	cleaning ??= (async () => {
		await Promise.all([...children].map(killChild));
		await producer?.end({ timeout: 1 }).catch(() => undefined);
		await pg?.stop().catch((e) => log(`stopping Postgres: ${(e as Error).message}`));
		rmSync(tmp, { recursive: true, force: true });
	})();
	return cleaning;
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
	process.on(sig, () => {
		if (cleaning) return;
		log(`${sig}: stopping`);
		printResults();
		void cleanup().finally(() => process.exit(130));
	});
}
process.on('exit', () => {
	// Last resort if we die without cleanup(): no orphans, no running Postgres.
	for (const c of children) c.kill('SIGKILL');
	if (pg?.owned && !cleaning) {
		try {
			process.kill(pg.pid, 'SIGINT');
		} catch {
			/* gone */
		}
	}
});

// ---------------------------------------------------------------------------------- helpers

function rssKb(pid: number): number {
	const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
	return m ? Number(m[1]) : NaN;
}

/** utime + stime of a process, in ms. */
function cpuMs(pid: number): number {
	const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
	const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
	return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

interface Server {
	child: ChildProcess;
	pid: number;
	port: number;
	base: string;
}

/** Extra node flags for the servers under test (BENCH_NODE_ARGS for all, plus one for Nomos only). */
const nodeArgs = (extra?: string) => [process.env.BENCH_NODE_ARGS, extra && process.env[extra]].flatMap((v) => v?.split(' ').filter(Boolean) ?? []);

async function startServer(system: System, databaseUrl: string): Promise<Server> {
	const port = await freePort();
	const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: databaseUrl };
	let args: string[];
	if (system === 'nomos') {
		Object.assign(env, {
			NOMOS_WORKER: 'off',
			NOMOS_INVENTORY_SYNC: 'off',
			NOMOS_OPERATOR_USERNAME: OPERATOR.username,
			NOMOS_OPERATOR_PASSWORD: OPERATOR.password,
			NOMOS_DATA_DIR: path.join(tmp, 'nomos-data'),
			NOMOS_HOSTS: '',
			NOMOS_KNOWLEDGE_DIR: '',
			OPENAI_BASE_URL: ''
		});
		delete env.ORIGIN;
		delete env.PROTOCOL_HEADER;
		args = [...nodeArgs('BENCH_NOMOS_NODE_ARGS'), 'server.js'];
	} else {
		args = [...nodeArgs(), '--import', 'tsx', system === 'bare' ? 'bench/bare-sse-server.ts' : 'bench/poll-server.ts'];
	}
	// BENCH_NOMOS_DIR: run Nomos from another checkout's build (e.g. to compare before/after a change).
	const cwd = system === 'nomos' && process.env.BENCH_NOMOS_DIR ? path.resolve(process.env.BENCH_NOMOS_DIR) : ROOT;
	const child = track(spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }));
	const tail: string[] = [];
	const keep = (prefix: string) => (chunk: Buffer) => {
		if (process.env.BENCH_SERVER_LOG) appendFileSync(process.env.BENCH_SERVER_LOG, chunk);
		for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
			tail.push(line);
			if (tail.length > 30) tail.shift();
			if (prefix === 'err' && !/ExperimentalWarning|--trace-warnings/.test(line)) console.error(`  [${system} stderr] ${line}`);
		}
	};
	child.stdout!.on('data', keep('out'));
	child.stderr!.on('data', keep('err'));
	await new Promise<void>((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`${system} did not start within 60 s:\n${tail.join('\n')}`)), 60_000);
		const onData = (chunk: Buffer) => {
			if (/listening on/.test(chunk.toString('utf8'))) {
				clearTimeout(timer);
				child.stdout!.off('data', onData);
				resolve();
			}
		};
		child.stdout!.on('data', onData);
		child.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`${system} exited (code ${code}) while starting:\n${tail.join('\n')}`));
		});
	});
	child.removeAllListeners('exit');
	child.once('exit', () => children.delete(child));
	return { child, pid: child.pid!, port, base: `http://127.0.0.1:${port}` };
}

async function login(base: string): Promise<string> {
	const res = await fetch(`${base}/login`, {
		method: 'POST',
		redirect: 'manual',
		headers: { origin: base, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
		body: new URLSearchParams(OPERATOR)
	});
	const cookie = res.headers.getSetCookie().find((c) => c.startsWith('nomos_session='));
	if (res.status !== 303 || !cookie) throw new Error(`login failed: HTTP ${res.status}`);
	return cookie.split(';')[0];
}

// ------------------------------------------------------------------------- client processes

type Msg = { ev: string; [k: string]: unknown };

class Clients {
	#child: ChildProcess;
	#inbox: Msg[] = [];
	#waiting: Array<{ ev: string; resolve: (m: Msg) => void }> = [];

	private constructor(child: ChildProcess) {
		this.#child = child;
		child.on('message', (m: Msg) => {
			const i = this.#waiting.findIndex((w) => w.ev === m.ev);
			if (i === -1) this.#inbox.push(m);
			else this.#waiting.splice(i, 1)[0].resolve(m);
		});
	}

	static async spawn(): Promise<Clients> {
		const child = track(spawn(process.execPath, ['--import', 'tsx', 'bench/sse-clients.ts'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
		const c = new Clients(child);
		await c.next('ready', 30_000);
		return c;
	}

	next<T extends Msg = Msg>(ev: string, timeoutMs = 60_000): Promise<T> {
		const i = this.#inbox.findIndex((m) => m.ev === ev);
		if (i !== -1) return Promise.resolve(this.#inbox.splice(i, 1)[0] as T);
		return new Promise<T>((resolve, reject) => {
			const timer = setTimeout(() => reject(new Error(`client process: no "${ev}" within ${timeoutMs} ms`)), timeoutMs);
			this.#waiting.push({
				ev,
				resolve: (m) => {
					clearTimeout(timer);
					resolve(m as T);
				}
			});
		});
	}

	ask<T extends Msg = Msg>(msg: Record<string, unknown>, ev: string, timeoutMs?: number): Promise<T> {
		this.#child.send(msg);
		return this.next<T>(ev, timeoutMs);
	}

	async close(): Promise<void> {
		await this.ask({ cmd: 'close' }, 'closed', 5000).catch(() => undefined);
		await killChild(this.#child);
	}
}

/** Open files a process may have (`ulimit -n`); each client connection is one. */
const NOFILE = (() => {
	try {
		return Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim()) || 1024;
	} catch {
		return 1024;
	}
})();

async function spawnClients(n: number): Promise<Clients[]> {
	// One client process per 500 connections (parsing spreads over processes), more if the
	// open-file limit (which node cannot raise itself) is lower than that.
	const perProcess = Math.max(50, Math.min(500, NOFILE - 100));
	const procs = Math.max(1, Number(process.env.BENCH_CLIENT_PROCS) || Math.ceil(n / perProcess));
	return Promise.all(Array.from({ length: Math.min(procs, n) }, () => Clients.spawn()));
}

const shares = (n: number, k: number) => Array.from({ length: k }, (_, i) => Math.floor(n / k) + (i < n % k ? 1 : 0));

// --------------------------------------------------------------------------------- producer

const NOTE = 'bench event: a payload of about the size of a small execution update; '.repeat(2);

async function latestId(): Promise<number> {
	const [r] = await producer!<{ id: number }[]>`select coalesce(max(id), 0)::float8 as id from events`;
	return r.id;
}

/** Commits `count` events at `rate`/s (absolute schedule); returns id → commit time (after COMMIT returned). */
async function produce(count: number, rate: number): Promise<Map<number, number>> {
	const sql = producer!;
	const commits = new Map<number, number>();
	const start = nowMs();
	for (let seq = 0; seq < count; seq++) {
		const due = start + (seq * 1000) / rate;
		const wait = due - nowMs();
		if (wait > 0) await sleep(wait);
		// A registered type (schemas/events.ts): the SSE stream skips any other. Its payload is not parsed there.
		const payload = JSON.stringify({ seq, sentAt: nowMs(), note: NOTE });
		// as emitEventNow (queries/events.ts): the final id is given by the commit trigger, run here at once
		const id = await sql.begin<number>(async (tx) => {
			await tx`insert into events (session_id, type, payload) values (null, 'workers.changed', ${payload}::text::jsonb)`;
			await tx`set constraints events_commit_order immediate`;
			const [row] = await tx<{ id: string }[]>`select current_setting('nomos.last_event_id') as id`;
			return Number(row.id);
		});
		commits.set(id, nowMs());
	}
	return commits;
}

// -------------------------------------------------------------------------------- measuring

interface Row {
	system: System;
	n: number;
	open?: number;
	median?: number;
	p99?: number;
	mean?: number;
	perSec?: number;
	kbPerStream?: number;
	kbPerStreamMarginal?: number;
	cpuUs?: number;
	lost?: number;
	dup?: number;
	outOfOrder?: number;
	unexpected?: number;
	idleReqPerSec?: number;
	note?: string;
}

interface Report extends Msg {
	latencies: number[];
	lost: number;
	dup: number;
	outOfOrder: number;
	unexpected: number;
	deliveries: number;
	firstAt: number;
	lastAt: number;
	errors: number;
	ended: number;
}

function quantile(sorted: Float64Array, q: number): number {
	if (!sorted.length) return NaN;
	const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
	return sorted[i];
}

/** Commits the events, waits for every client, and turns the client reports into a row. */
async function eventPhase(row: Row, server: Server, clients: Clients[], after: number, drainMs: number): Promise<number> {
	const count = Math.round(RATE * SECONDS);
	const cpu0 = cpuMs(server.pid);
	const t0 = nowMs();
	const commits = await produce(count, RATE);
	const lastId = Math.max(...commits.keys());
	const awaited = await Promise.all(
		clients.map((c) => c.ask<Msg & { complete: boolean }>({ cmd: 'await', lastId, timeoutMs: drainMs }, 'awaited', drainMs + 10_000))
	);
	const cpu1 = cpuMs(server.pid);
	if (!awaited.every((a) => a.complete)) row.note = `not every client got event ${lastId} within ${drainMs} ms`;
	// The table is the truth for "every event": all ids after the clients' cursor.
	const expected = (await producer!<{ id: number }[]>`select id::float8 as id from events where id > ${after} order by id`).map((r) => r.id);
	const commitTimes = expected.map((id) => commits.get(id) ?? NaN);
	const reports = await Promise.all(clients.map((c) => c.ask<Report>({ cmd: 'report', expected, commitTimes }, 'report', 30_000)));
	if (process.env.BENCH_DUMP) writeFileSync(`${process.env.BENCH_DUMP}-${row.system}-${row.n}.json`, JSON.stringify({ expected, commitTimes, reports }));
	const lat = new Float64Array(reports.reduce((n, r) => n + r.latencies.length, 0));
	let k = 0;
	for (const r of reports) for (const v of r.latencies) lat[k++] = v;
	lat.sort();
	const deliveries = reports.reduce((n, r) => n + r.deliveries, 0);
	const lastAt = Math.max(...reports.map((r) => r.lastAt));
	row.median = quantile(lat, 0.5);
	row.p99 = quantile(lat, 0.99);
	row.mean = lat.reduce((s, v) => s + v, 0) / (lat.length || 1);
	row.perSec = deliveries / ((lastAt - t0) / 1000);
	row.cpuUs = deliveries ? ((cpu1 - cpu0) * 1000) / deliveries : NaN;
	row.lost = reports.reduce((n, r) => n + r.lost, 0);
	row.dup = reports.reduce((n, r) => n + r.dup, 0);
	row.outOfOrder = reports.reduce((n, r) => n + r.outOfOrder, 0);
	row.unexpected = reports.reduce((n, r) => n + r.unexpected, 0);
	const errors = reports.reduce((n, r) => n + r.errors + r.ended, 0);
	if (errors) row.note = [row.note, `${errors} connections errored/ended`].filter(Boolean).join('; ');
	return deliveries;
}

async function runSse(system: 'nomos' | 'bare', n: number, databaseUrl: string): Promise<Row> {
	const row: Row = { system, n };
	// The client processes (warm-up, N streams, N more for the marginal cost) start while the
	// server does; each waits idle until it is asked to open its streams.
	const [server, warm, clients, probe] = await Promise.all([startServer(system, databaseUrl), Clients.spawn(), spawnClients(n), spawnClients(n)]);
	try {
		const headers: Record<string, string> = system === 'nomos' ? { cookie: await login(server.base) } : {};
		const endpoint = `${server.base}${system === 'nomos' ? '/api/events' : '/events'}`;

		// Warm-up, the same for every system and N (JIT, lazily loaded code, pool connections):
		// 20 streams, 20 events, then closed.
		await warm.ask({ cmd: 'open', mode: 'sse', url: `${endpoint}?after=${await latestId()}`, count: 20, headers }, 'opened');
		const warmCommits = await produce(20, 40);
		await warm.ask({ cmd: 'await', lastId: Math.max(...warmCommits.keys()), timeoutMs: 5000 }, 'awaited', 15_000);
		await warm.close();

		await sleep(SETTLE_MS);
		const rss0 = rssKb(server.pid);
		const after = await latestId();
		const opened = await Promise.all(
			shares(n, clients.length).map((k, i) =>
				clients[i].ask<Msg & { open: number; failed: number; error?: string; ms: number }>(
					{ cmd: 'open', mode: 'sse', url: `${endpoint}?after=${after}`, count: k, headers },
					'opened',
					120_000
				)
			)
		);
		row.open = opened.reduce((s, o) => s + o.open, 0);
		const failed = opened.reduce((s, o) => s + o.failed, 0);
		if (failed) row.note = `${failed} streams failed to open (${opened.find((o) => o.error)?.error})`;
		log(`${LABEL[system]} N=${n}: ${row.open} streams open in ${Math.max(...opened.map((o) => o.ms)).toFixed(0)} ms`);
		await sleep(SETTLE_MS);
		const rssN = rssKb(server.pid);
		row.kbPerStream = (rssN - rss0) / Math.max(1, row.open);
		// Marginal cost: N more streams on top of the N open ones (from other client processes),
		// measured, then closed before the event phase. Unlike 0→N, this is free of one-off growth
		// (V8's young generation becoming resident, lazily compiled code), which at N=100 would
		// otherwise be charged to the streams.
		const probed = await Promise.all(
			shares(n, probe.length).map((k, i) =>
				probe[i].ask<Msg & { open: number }>({ cmd: 'open', mode: 'sse', url: `${endpoint}?after=${after}`, count: k, headers }, 'opened', 120_000)
			)
		);
		await sleep(SETTLE_MS);
		row.kbPerStreamMarginal =
			(rssKb(server.pid) - rssN) /
			Math.max(
				1,
				probed.reduce((s, o) => s + o.open, 0)
			);
		await Promise.all(probe.map((c) => c.close()));
		await sleep(500);
		await eventPhase(row, server, clients, after, 10_000);
		// Debugging aid: keep the streams open (e.g. to take a heap snapshot of the server).
		if (process.env.BENCH_HOLD_MS) {
			log(`holding ${n} streams open for ${process.env.BENCH_HOLD_MS} ms (server pid ${server.pid})`);
			await sleep(Number(process.env.BENCH_HOLD_MS));
		}
		await Promise.all(clients.map((c) => c.close()));
	} finally {
		await killChild(server.child);
	}
	return row;
}

async function runPoll(n: number, databaseUrl: string): Promise<Row> {
	const row: Row = { system: 'poll', n };
	const [server, clients] = await Promise.all([startServer('poll', databaseUrl), spawnClients(n)]);
	try {
		const after = await latestId();
		const k = shares(n, clients.length);
		// Staggered over the 3 s period across all client processes.
		await Promise.all(
			k.map((count, i) => clients[i].ask({ cmd: 'open', mode: 'poll', url: `${server.base}/events`, count, headers: {}, pollMs: POLL_MS, after }, 'opened'))
		);
		row.open = n;
		await sleep(POLL_MS + 500);
		const count = async () =>
			(await Promise.all(clients.map((c) => c.ask<Msg & { requests: number }>({ cmd: 'count' }, 'count')))).reduce((s, m) => s + m.requests, 0);
		const c0 = await count();
		const t0 = nowMs();
		await sleep(2 * POLL_MS);
		row.idleReqPerSec = ((await count()) - c0) / ((nowMs() - t0) / 1000);
		log(`polling N=${n}: ${row.idleReqPerSec.toFixed(0)} requests/s idle`);
		await eventPhase(row, server, clients, after, POLL_MS + 2000);
		await Promise.all(clients.map((c) => c.close()));
	} finally {
		await killChild(server.child);
	}
	return row;
}

// ------------------------------------------------------------------------------------ output

const fmt = (v: number | undefined, digits = 1) => (v === undefined || Number.isNaN(v) ? '—' : v.toFixed(digits));

function table(rows: Row[]): string {
	const head = ['system', 'N', 'median ms', 'p99 ms', 'mean ms', 'deliveries/s', 'KB/stream 0→N', 'KB/stream N→2N', 'CPU µs/deliv', 'lost/dup', 'idle req/s'];
	const body = rows.map((r) => [
		LABEL[r.system],
		String(r.n),
		fmt(r.median),
		fmt(r.p99),
		fmt(r.mean),
		fmt(r.perSec, 0),
		r.system === 'poll' ? 'n/a' : fmt(r.kbPerStream),
		r.system === 'poll' ? 'n/a' : fmt(r.kbPerStreamMarginal),
		fmt(r.cpuUs, 0),
		r.lost === undefined ? '—' : `${r.lost}/${r.dup}` + (r.outOfOrder || r.unexpected ? ` (ooo ${r.outOfOrder}, extra ${r.unexpected})` : ''),
		r.system === 'poll' ? fmt(r.idleReqPerSec, 0) : '—'
	]);
	const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
	const line = (cells: string[]) => '| ' + cells.map((c, i) => (i < 2 ? c.padEnd(w[i]) : c.padStart(w[i]))).join(' | ') + ' |';
	return [line(head), '|' + w.map((x, i) => (i < 2 ? ':' : '-') + '-'.repeat(x) + (i < 2 ? '-' : ':')).join('|') + '|', ...body.map(line)].join('\n');
}

function verdicts(rows: Row[]): string[] {
	const out: string[] = [];
	for (const n of SIZES) {
		const nomos = rows.find((r) => r.system === 'nomos' && r.n === n);
		const bare = rows.find((r) => r.system === 'bare' && r.n === n);
		if (!nomos || !bare || nomos.median === undefined || bare.median === undefined) continue;
		const ok = nomos.median <= 1.5 * bare.median && nomos.p99! <= 1.5 * bare.p99!;
		out.push(
			`N=${n}: Nomos median/p99 within 1.5× of bare: ${ok ? 'yes' : 'no'} ` +
				`(median ${fmt(nomos.median)} vs ${fmt(bare.median)} ms = ${fmt(nomos.median / bare.median, 2)}×, p99 ${fmt(nomos.p99)} vs ${fmt(bare.p99)} ms = ${fmt(nomos.p99! / bare.p99!, 2)}×)`
		);
		out.push(
			`N=${n}: KB per stream < 20: ${nomos.kbPerStream! < 20 ? 'yes' : 'no'} (0→N: Nomos ${fmt(nomos.kbPerStream)} KB, bare ${fmt(bare.kbPerStream)} KB; ` +
				`marginal N→2N: Nomos ${fmt(nomos.kbPerStreamMarginal)} KB, bare ${fmt(bare.kbPerStreamMarginal)} KB)`
		);
		const lossless = (r: Row) => r.lost === 0 && r.dup === 0 && r.outOfOrder === 0;
		out.push(`N=${n}: every client got every event once, in order: Nomos ${lossless(nomos) ? 'yes' : 'no'}, bare ${lossless(bare) ? 'yes' : 'no'}`);
	}
	return out;
}

// -------------------------------------------------------------------------------------- main

const rows: Row[] = [];
function printResults(): void {
	if (!rows.length) return;
	console.log(`\nRealtime: ${RATE} events/s for ${SECONDS} s per run; latency = commit returned → client received (ms)`);
	console.log(table(rows));
	for (const v of verdicts(rows)) console.log(v);
	for (const r of rows) if (r.note) console.log(`note: ${LABEL[r.system]} N=${r.n}: ${r.note}`);
}

/** Started once the build is there: a fresh clone's first build is not the bench's time. */
let watchdog: NodeJS.Timeout | undefined;
function startWatchdog(): void {
	watchdog = setTimeout(() => {
		if (cleaning) return;
		log(`watchdog: still running after ${DEADLINE_MS / 1000} s; stopping with partial results`);
		printResults();
		void cleanup().finally(() => process.exit(1));
	}, DEADLINE_MS);
}

async function main(): Promise<void> {
	const started = nowMs();
	if (process.env.BENCH_NICE) {
		// Children (servers, clients, Postgres) inherit it: less noise from other work on the machine.
		setPriority(Number(process.env.BENCH_NICE));
		log(`niceness ${getPriority()}`);
	}
	execFileSync(process.execPath, ['scripts/ensure-build.js'], { stdio: 'inherit' });
	startWatchdog();
	log(
		`ulimit -n: ${NOFILE}, CPUs: ${availableParallelism()}, load average: ${loadavg()
			.map((l) => l.toFixed(2))
			.join(' ')}, CLK_TCK ${CLK_TCK}`
	);

	pg = await benchPostgres(tmp, (l) => log(`postgres: ${l}`));
	log(
		pg.owned
			? `embedded Postgres on ${new URL(pg.url).host} (${path.relative(ROOT, tmp)})`
			: `database ${new URL(pg.url).pathname.slice(1)} on the smoke's Postgres`
	);
	producer = postgres(pg.url, { max: 1, onnotice: () => undefined, connection: { application_name: 'bench-producer' } });

	// Migrated as the app's boot does (its fast path then finds the database up to date).
	const t = nowMs();
	await runMigrations(pg.url);
	log(`migrated in ${((nowMs() - t) / 1000).toFixed(1)} s`);

	for (const n of SIZES) {
		for (const system of SYSTEMS) {
			const t0 = nowMs();
			try {
				rows.push(system === 'poll' ? await runPoll(n, pg.url) : await runSse(system, n, pg.url));
			} catch (e) {
				if (cleaning) await new Promise(() => undefined); // stopping (Ctrl-C, watchdog): that handler exits
				log(`${LABEL[system]} N=${n} failed: ${(e as Error).stack}`);
				rows.push({ system, n, note: `failed: ${(e as Error).message.split('\n')[0]}` });
			}
			const r = rows[rows.length - 1];
			log(`${LABEL[system]} N=${n}: median ${fmt(r.median)} ms, p99 ${fmt(r.p99)} ms (${((nowMs() - t0) / 1000).toFixed(1)} s)`);
		}
	}
	printResults();
	log(`total ${((nowMs() - started) / 1000).toFixed(0)} s`);
	// A stream that delivered nothing is a broken bench (or a broken Nomos), not a figure: fail, so
	// bench:smoke notices (a made-up event type, skipped by the typed SSE stream, once did this).
	const dead = rows.filter((r) => r.system === 'nomos' && !r.median);
	if (dead.length) throw new Error(`Nomos SSE delivered nothing at N=${dead.map((r) => r.n).join(', ')}`);
}

try {
	await main();
	if (cleaning) await new Promise(() => undefined);
	clearTimeout(watchdog);
	await cleanup();
	process.exit(0);
} catch (e) {
	clearTimeout(watchdog);
	console.error(`[bench] ${(e as Error).stack}`);
	printResults();
	await cleanup();
	process.exit(1);
}
