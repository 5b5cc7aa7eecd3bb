// `npm run bench:smoke` — every benchmark once at tiny sizes, so none rots unnoticed (issue #34):
// each runs as its own child process (as `npm run bench` runs it) with size flags/env that make it
// quick and BENCH_SMOKE=1 (a missed time target is printed, not a failure: tiny runs time nothing).
// A bench passes when it exits 0 and printed its table. The figures mean nothing; the code paths
// (seeding, doubles, servers, the report) are what is checked. Runs from `npm test`.
//
//   npm run bench:smoke [-- --only stream,tokens] [--jobs 2]
// Needs build/ for realtime, loop, coldstart and chaos (they build it when it is missing) and
// Chromium for loop's latency part (as the e2e tests).
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { ROOT } from './harness';

type Smoke = { name: string; file: string; args?: string[]; env?: Record<string, string>; table: RegExp };

/**
 * Every bench in package.json, at sizes that take seconds. `table` is a line of the table it
 * prints. The longest first (realtime, the loop's two parts, chaos), so that two lanes end
 * together; the loop's parts are two entries for the same reason.
 */
export const SMOKES: Smoke[] = [
	{
		name: 'realtime',
		file: 'bench/realtime.ts',
		env: { BENCH_SIZES: '3', BENCH_RATE: '10', BENCH_SECONDS: '1', BENCH_SETTLE_MS: '100', BENCH_POLL_MS: '300' },
		table: /^\| system +\| N +\| median ms/m
	},
	{ name: 'loop', file: 'bench/loop.ts', args: ['--only', 'latency', '--runs', '1'], table: /^\| moment \| n \| p50 \| p99/m },
	{
		name: 'chaos',
		file: 'bench/chaos.ts',
		args: ['--web', '1', '--workers', '1', '--sessions', '1', '--seconds', '10', '--kill-min', '4', '--kill-max', '6', '--restart-delay', '0.5', '--stop-timeout', '5', '--patience', '10', '--drain', '5'],
		table: /^\| count \| value \| goal \|/m
	},
	{
		name: 'loop-load',
		file: 'bench/loop.ts',
		args: ['--only', 'load', '--sessions', '1', '--concurrency', '1'],
		env: { BENCH_CTS: '1', BENCH_PVE_DELAY_MS: '1' },
		table: /^\| per session \(ms\)/m
	},
	{ name: 'coldstart', file: 'bench/coldstart.ts', args: ['--runs', '1'], table: /^spawn → first 200 of GET \/login: p50/m },
	{ name: 'tokens', file: 'bench/tokens.ts', args: ['--only', 'answer'], table: /^scenario +requests +prompt tokens/m },
	{ name: 'stream', file: 'bench/stream.ts', args: ['--tabs', '1', '--text-kb', '1', '--delay-ms', '0', '--calls', '2', '--result-kb', '1', '--tools-text-kb', '0.5'], table: /^\| scenario +\| tabs/m },
	{ name: 'review', file: 'bench/review.ts', env: { BENCH_SESSIONS: '30', BENCH_TOOL_CALLS: '1000', BENCH_RUNS: '1' }, table: /^measurement +\| runs \| median/m },
	{ name: 'blast-radius', file: 'bench/blast-radius.ts', env: { BENCH_CTS: '20', BENCH_NOTES: '40', BENCH_PAST_EXECUTIONS: '20', BENCH_TARGETS: '4', BENCH_ROUNDS: '1' }, table: /^\| measurement \| runs \| p50/m }
];

type Outcome = { name: string; code: number | null; seconds: number; missing: string[]; output: string };

function runOne(s: Smoke): Promise<Outcome> {
	const started = performance.now();
	return new Promise((resolve) => {
		const child = spawn(process.execPath, ['--import', 'tsx', s.file, ...(s.args ?? [])], {
			cwd: ROOT,
			env: { ...process.env, ...s.env, BENCH_SMOKE: '1' },
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
			resolve({ name: s.name, code, seconds: (performance.now() - started) / 1000, missing, output });
		});
	});
}

async function main(): Promise<number> {
	const { values } = parseArgs({ options: { only: { type: 'string' }, jobs: { type: 'string', default: '1' } } });
	const only = values.only?.split(',').map((x) => x.trim());
	const unknown = only?.filter((n) => !SMOKES.some((s) => s.name === n)) ?? [];
	if (unknown.length) throw new Error(`--only: unknown bench ${unknown.join(', ')} (${SMOKES.map((s) => s.name).join(', ')})`);
	const jobs = Math.max(1, Math.round(Number(values.jobs)) || 1);
	const queue = SMOKES.filter((s) => !only || only.includes(s.name));
	const started = performance.now();
	const outcomes: Outcome[] = [];
	await Promise.all(
		Array.from({ length: Math.min(jobs, queue.length) }, async () => {
			for (let s = queue.shift(); s; s = queue.shift()) {
				const o = await runOne(s);
				outcomes.push(o);
				const ok = o.code === 0 && !o.missing.length;
				console.log(`[smoke] ${o.name}: ${ok ? 'ok' : 'FAILED'} in ${o.seconds.toFixed(1)} s`);
				if (!ok) {
					console.log(o.output.replace(/^/gm, `  ${o.name} | `));
					console.log(`[smoke] ${o.name}: exit ${o.code}${o.missing.length ? `; no table line ${o.missing.join(', ')}` : ''}`);
				}
			}
		})
	);
	const failed = outcomes.filter((o) => o.code !== 0 || o.missing.length);
	console.log(`[smoke] ${outcomes.length - failed.length} of ${outcomes.length} benches ran and printed their tables in ${((performance.now() - started) / 1000).toFixed(1)} s`);
	return failed.length ? 1 : 0;
}

process.exit(await main());
