// `npm run bench:smoke` — every benchmark once at tiny sizes, so none rots unnoticed (issue #34):
// each runs as its own child process (as `npm run bench` runs it) with size flags/env that make it
// quick and BENCH_SMOKE=1 (a missed time target is printed, not a failure: tiny runs time nothing).
// A bench passes when it exits 0 and printed its table. The figures mean nothing; the code paths
// (seeding, doubles, servers, the report) are what is checked. Runs from `npm test`.
//
//   npm run bench:smoke [-- --only stream,tokens] [--jobs 3]
// Builds the app once first when build/ is stale (realtime, loop, coldstart and chaos run it), then
// starts one embedded Postgres that five of the benches share (a database each). Needs Chromium for
// the loop's latency part (as the e2e tests). Prints each bench's wall and CPU seconds (GNU time's
// user + sys of the bench and everything it started) and the sum: on a machine other work loads,
// the CPU seconds are the figure to compare.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { startEmbeddedPostgres } from '../src/lib/server/db/embedded';
import { runMigrations } from '../src/lib/server/db/migrate';
import { migrateWorkerSchema } from '../src/lib/server/jobs/worker';
import { benchPort, ROOT } from './harness';

/** `build`: it runs build/ (the built app), so the smoke builds once before it starts. */
type Smoke = { name: string; file: string; args?: string[]; env?: Record<string, string>; table: RegExp; build?: boolean };

/**
 * Every bench in package.json, at sizes that take seconds. `table` is a line of the table it
 * prints. The longest first (chaos, mostly waiting on its kills; the loop's Chromium part;
 * realtime), so that the lanes end together; the loop's two parts are two entries for the same
 * reason, each run straight from its file (bench/loop.ts only starts them one after the other).
 */
export const SMOKES: Smoke[] = [
	{
		name: 'chaos',
		file: 'bench/chaos.ts',
		build: true,
		args: [
			'--web',
			'1',
			'--workers',
			'1',
			'--sessions',
			'1',
			'--seconds',
			'6',
			'--kill-min',
			'2',
			'--kill-max',
			'3',
			'--restart-delay',
			'0.5',
			'--stop-timeout',
			'3',
			'--patience',
			'5',
			'--drain',
			'3'
		],
		table: /^\| count \| value \| goal \|/m
	},
	{ name: 'loop', file: 'bench/loop-latency.ts', args: ['--runs', '1'], build: true, table: /^\| moment \| n \| p50 \| p99/m },
	{
		name: 'realtime',
		file: 'bench/realtime.ts',
		build: true,
		env: { BENCH_SIZES: '3', BENCH_RATE: '10', BENCH_SECONDS: '1', BENCH_SETTLE_MS: '100', BENCH_POLL_MS: '300' },
		table: /^\| system +\| N +\| median ms/m
	},
	{
		name: 'loop-load',
		file: 'bench/loop-load.ts',
		args: ['--sessions', '1', '--concurrency', '1'],
		env: { BENCH_CTS: '1', BENCH_PVE_DELAY_MS: '1' },
		table: /^\| per session \(ms\)/m
	},
	{ name: 'coldstart', file: 'bench/coldstart.ts', args: ['--runs', '1'], build: true, table: /^spawn → first 200 of GET \/login: p50/m },
	{ name: 'tokens', file: 'bench/tokens.ts', args: ['--only', 'answer'], table: /^scenario +requests +prompt tokens/m },
	{
		name: 'stream',
		file: 'bench/stream.ts',
		args: ['--tabs', '1', '--text-kb', '1', '--delay-ms', '0', '--calls', '2', '--result-kb', '1', '--tools-text-kb', '0.5'],
		table: /^\| scenario +\| tabs/m
	},
	{
		name: 'review',
		file: 'bench/review.ts',
		env: { BENCH_SESSIONS: '30', BENCH_TOOL_CALLS: '1000', BENCH_RUNS: '1' },
		table: /^measurement +\| runs \| median/m
	},
	{
		name: 'blast-radius',
		file: 'bench/blast-radius.ts',
		env: { BENCH_CTS: '20', BENCH_NOTES: '40', BENCH_PAST_EXECUTIONS: '20', BENCH_TARGETS: '4', BENCH_ROUNDS: '1' },
		table: /^\| measurement \| runs \| p50/m
	}
];

type Outcome = { name: string; code: number | null; seconds: number; cpu?: number; missing: string[]; output: string };

/**
 * GNU time, when the machine has it: each bench's CPU seconds (user + sys of it and every process
 * it started and waited for: servers, Postgres, Chromium), which a loaded machine's wall time hides.
 */
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const timesDir = TIME ? mkdtempSync(path.join(os.tmpdir(), 'nomos-smoke-')) : undefined;
process.on('exit', () => timesDir && rmSync(timesDir, { recursive: true, force: true }));

function cpuSeconds(file: string): number | undefined {
	try {
		const [user, sys] = readFileSync(file, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
		return Number.isFinite(user + sys) ? user + sys : undefined;
	} catch {
		return undefined;
	}
}

/**
 * One embedded Postgres for the benches that take one through harness.ts's benchPostgres (each
 * gets its own database, a copy of a template migrated here once): an initdb, a server start and
 * the migrations once instead of once per bench. Those that measure the server itself keep their
 * own: coldstart and the loop's latency part (the app's embedded start), stream (WAL of the whole
 * server), review.
 */
async function sharedPostgres(): Promise<{ env: Record<string, string>; stop: () => Promise<void> }> {
	const dir = mkdtempSync(path.join(os.tmpdir(), 'nomos-smoke-pg-'));
	chmodSync(dir, 0o755); // Postgres runs as its own user when we are root
	const pg = await startEmbeddedPostgres({ dataDir: dir, port: await benchPort() });
	const stop = async () => {
		await pg.stop();
		rmSync(dir, { recursive: true, force: true });
	};
	try {
		const admin = postgres(pg.url, { max: 1, onnotice: () => undefined });
		await admin`create database bench_template`;
		await admin.end({ timeout: 5 });
		const template = new URL(pg.url);
		template.pathname = '/bench_template';
		await runMigrations(template.toString(), path.join(ROOT, 'drizzle'));
		await migrateWorkerSchema(template.toString());
	} catch (e) {
		await stop();
		throw e;
	}
	return { env: { BENCH_PG_URL: pg.url, BENCH_PG_PID: String(pg.pid), BENCH_PG_TEMPLATE: 'bench_template' }, stop };
}

function runOne(s: Smoke, shared: Record<string, string>): Promise<Outcome> {
	const started = performance.now();
	const node = [process.execPath, '--import', 'tsx', s.file, ...(s.args ?? [])];
	const timesFile = timesDir && path.join(timesDir, `${s.name}.txt`);
	const argv = TIME && timesFile ? [TIME, '-f', '%U %S', '-o', timesFile, ...node] : node;
	return new Promise((resolve) => {
		const child = spawn(argv[0], argv.slice(1), {
			cwd: ROOT,
			env: { ...process.env, ...shared, ...s.env, BENCH_SMOKE: '1' },
			stdio: ['ignore', 'pipe', 'pipe']
		});
		let output = '';
		child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
		child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
		const stop = (sig: NodeJS.Signals) => child.kill(sig);
		process.on('SIGINT', stop).on('SIGTERM', stop);
		child.once('error', (e) => (output += `\n[smoke] ${e.message}`));
		child.once('close', (code) => {
			process.off('SIGINT', stop).off('SIGTERM', stop);
			const missing = [s.table].filter((re) => !re.test(output)).map(String);
			resolve({ name: s.name, code, seconds: (performance.now() - started) / 1000, cpu: timesFile ? cpuSeconds(timesFile) : undefined, missing, output });
		});
	});
}

/** CPU seconds of this process and of every child it has waited for (the benches, the shared Postgres once stopped); children only on Linux. */
function cpuNow(): number {
	const own = process.cpuUsage();
	let children = 0;
	try {
		const stat = readFileSync('/proc/self/stat', 'utf8');
		const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
		// Fields 16 and 17 (cutime, cstime) are the 14th and 15th after the state; in clock ticks (100 a second here).
		children = (Number(f[13]) + Number(f[14])) / 100;
	} catch {
		/* not Linux */
	}
	return (own.user + own.system) / 1e6 + children;
}

async function main(): Promise<number> {
	const { values } = parseArgs({ options: { only: { type: 'string' }, jobs: { type: 'string', default: '1' } } });
	const only = values.only?.split(',').map((x) => x.trim());
	const unknown = only?.filter((n) => !SMOKES.some((s) => s.name === n)) ?? [];
	if (unknown.length) throw new Error(`--only: unknown bench ${unknown.join(', ')} (${SMOKES.map((s) => s.name).join(', ')})`);
	const jobs = Math.max(1, Math.round(Number(values.jobs)) || 1);
	const queue = SMOKES.filter((s) => !only || only.includes(s.name));
	const started = performance.now();
	// One build before any bench starts (the benches' own ensure-build then finds it fresh; its
	// lock keeps two from building at once anyway): not counted in the benches' seconds.
	if (queue.some((s) => s.build)) {
		const b = spawnSync(process.execPath, ['scripts/ensure-build.js'], { cwd: ROOT, stdio: 'inherit' });
		if (b.status !== 0) {
			console.log(`[smoke] the build failed (exit ${b.status})`);
			return 1;
		}
		console.log(`[smoke] build/ is fresh (${((performance.now() - started) / 1000).toFixed(1)} s)`);
	}
	const benchStart = performance.now();
	const cpuStart = cpuNow();
	const pg = await sharedPostgres();
	process.on('SIGINT', () => void pg.stop()).on('SIGTERM', () => void pg.stop());
	console.log(`[smoke] one Postgres for the benches, template migrated (${((performance.now() - benchStart) / 1000).toFixed(1)} s)`);
	const outcomes: Outcome[] = [];
	await Promise.all(
		Array.from({ length: Math.min(jobs, queue.length) }, async () => {
			for (let s = queue.shift(); s; s = queue.shift()) {
				const o = await runOne(s, pg.env);
				outcomes.push(o);
				const ok = o.code === 0 && !o.missing.length;
				console.log(`[smoke] ${o.name}: ${ok ? 'ok' : 'FAILED'} in ${o.seconds.toFixed(1)} s${o.cpu === undefined ? '' : `, CPU ${o.cpu.toFixed(1)} s`}`);
				if (!ok) {
					console.log(o.output.replace(/^/gm, `  ${o.name} | `));
					console.log(`[smoke] ${o.name}: exit ${o.code}${o.missing.length ? `; no table line ${o.missing.join(', ')}` : ''}`);
				}
			}
		})
	);
	await pg.stop();
	const failed = outcomes.filter((o) => o.code !== 0 || o.missing.length);
	const cpu = outcomes.every((o) => o.cpu !== undefined)
		? `; CPU ${(cpuNow() - cpuStart).toFixed(1)} s in all (the benches ${outcomes.reduce((a, o) => a + o.cpu!, 0).toFixed(1)} s)`
		: '';
	console.log(
		`[smoke] ${outcomes.length - failed.length} of ${outcomes.length} benches ran and printed their tables in ${((performance.now() - benchStart) / 1000).toFixed(1)} s${cpu}; load average ${os
			.loadavg()
			.map((l) => l.toFixed(2))
			.join(' ')}`
	);
	return failed.length ? 1 : 0;
}

process.exit(await main());
