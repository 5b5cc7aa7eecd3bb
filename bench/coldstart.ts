// `npm run bench:coldstart` — how long `npm start` takes on existing data to answer its first
// request (issue #15, "cold start"). Builds the app when build/ is stale, then starts
// `node server.js` with its own data dir and ports (embedded Postgres, worker on, no model, no
// hosts): one unmeasured start creates and migrates the data, then --runs N starts are timed from
// spawn to the first 200 of GET /login, each stopped with SIGTERM. Prints p50 / min / max and,
// for the last run, when each startup log line appeared.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({ options: { runs: { type: 'string', default: '7' }, worker: { type: 'string', default: 'on' } } });
const RUNS = Math.max(1, Number(opts.runs) || 7);

// Waits for a build another process runs (its lock), so it never starts a half-written build/.
if (spawnSync(process.execPath, ['scripts/ensure-build.js'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('the build failed');

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'nomos-coldstart-'));
const port = 43_000 + Math.floor(Math.random() * 500);
const env = {
	...process.env,
	NOMOS_DATA_DIR: dataDir,
	NOMOS_PG_PORT: String(port + 1),
	PORT: String(port),
	DATABASE_URL: '',
	NOMOS_WORKER: opts.worker,
	NOMOS_INVENTORY_SYNC: 'off',
	NOMOS_OPERATOR_PASSWORD: 'correct horse battery staple',
	NOMOS_HOSTS: '',
	NOMOS_KNOWLEDGE_DIR: '',
	OPENAI_BASE_URL: '',
	NOMOS_MODEL: ''
};

async function once(): Promise<{ ms: number; lines: string[] }> {
	const t0 = performance.now();
	const child = spawn(process.execPath, ['server.js'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
	const lines: string[] = [];
	const stamp = (d: Buffer) => {
		for (const l of String(d).split('\n').filter(Boolean)) lines.push(`${(performance.now() - t0).toFixed(0).padStart(6)} ms  ${l.slice(0, 110)}`);
	};
	child.stdout.on('data', stamp);
	child.stderr.on('data', stamp);
	let ms = 0;
	for (;;) {
		const r = await fetch(`http://127.0.0.1:${port}/login`).catch(() => null);
		if (r?.status === 200) {
			ms = performance.now() - t0;
			lines.push(`${ms.toFixed(0).padStart(6)} ms  GET /login 200`);
			break;
		}
		if (performance.now() - t0 > 60_000 || child.exitCode !== null) throw new Error(`no 200 from the app:\n${lines.join('\n')}`);
		await new Promise((r) => setTimeout(r, 10));
	}
	child.kill('SIGTERM');
	await new Promise((r) => child.once('exit', r));
	return { ms, lines };
}

try {
	await once();
	const times: number[] = [];
	let last: string[] = [];
	for (let i = 0; i < RUNS; i++) {
		const r = await once();
		times.push(r.ms);
		last = r.lines;
	}
	times.sort((a, b) => a - b);
	const p50 = times[Math.floor(times.length / 2)];
	console.log(
		`\nCold start on existing data (worker ${opts.worker}), ${RUNS} runs; ${os.cpus().length} CPUs, load average ${os
			.loadavg()
			.map((l) => l.toFixed(2))
			.join(' ')}`
	);
	console.log(`spawn → first 200 of GET /login: p50 ${p50.toFixed(0)} ms, min ${times[0].toFixed(0)}, max ${times[times.length - 1].toFixed(0)}\n`);
	console.log('the last run, line by line:');
	for (const l of last) console.log(`  ${l}`);
} finally {
	rmSync(dataDir, { recursive: true, force: true });
}
