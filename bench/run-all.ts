// `npm run bench` — runs every benchmark, one after the other, each as its own child process
// (`node --import tsx bench/<name>.ts`) with its output forwarded. A benchmark whose file does not
// exist yet is skipped. Exits non-zero if any benchmark failed; Ctrl-C stops the running one.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BENCHES = [
	'bench/realtime.ts',
	'bench/review.ts',
	'bench/loop.ts',
	'bench/stream.ts',
	'bench/coldstart.ts',
	'bench/blast-radius.ts',
	'bench/tokens.ts',
	'bench/gate.ts'
];

let current: ChildProcess | undefined;
let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
	process.on(sig, () => {
		stopping = true;
		// The child has its own SIGINT/SIGTERM cleanup (temp dirs, Postgres); let it finish.
		if (current && current.exitCode === null) current.kill(sig);
		else process.exit(130);
	});
}

function run(file: string): Promise<number> {
	return new Promise((resolve) => {
		current = spawn(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, stdio: 'inherit' });
		current.once('error', (e) => {
			console.error(`[bench] ${file}: ${e.message}`);
			resolve(1);
		});
		current.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
	});
}

// The build first, once (realtime, loop and coldstart run build/; each would build a stale one
// itself, but a fresh clone's first build is no bench's time).
const build = spawnSync(process.execPath, ['scripts/ensure-build.js'], { cwd: ROOT, stdio: 'inherit' });
if (build.status !== 0) {
	console.error(`[bench] the build failed (exit ${build.status})`);
	process.exit(1);
}

const failed: string[] = [];
for (const file of BENCHES) {
	if (stopping) break;
	if (!existsSync(path.join(ROOT, file))) {
		console.log(`[bench] ${file}: not there, skipped`);
		continue;
	}
	console.log(`\n[bench] ── ${file} ──`);
	const started = Date.now();
	const code = await run(file);
	console.log(`[bench] ${file}: ${code === 0 ? 'done' : `failed (exit ${code})`} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
	if (code !== 0) failed.push(file);
}
current = undefined;
if (failed.length) console.error(`[bench] failed: ${failed.join(', ')}`);
process.exit(stopping ? 130 : failed.length ? 1 : 0);
