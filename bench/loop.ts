// `npm run bench:loop` — the approval loop, in two parts, each its own process:
//   1. bench/loop-latency.ts: the waits one operator feels, through the built app in Chromium
//      (send → approval card, Approve → first command on the host, command end → the agent's
//      first words, answer → the agent's first words), --runs times, beside the SSH handshake;
//   2. bench/loop-load.ts: --sessions approvals at once against one worker (--concurrency slots).
//
//   npm run bench:loop -- --runs 20 --sessions 20 --concurrency 4 [--only latency|load]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const { values } = parseArgs({ args, options: { only: { type: 'string' } }, strict: false });
const parts = ['latency', 'load'].filter((p) => !values.only || values.only === p);
if (!parts.length) throw new Error(`--only must be latency or load, got ${String(values.only)}`);

let failed = false;
for (const part of parts) {
	const code = await new Promise<number>((resolve) => {
		const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, `bench/loop-${part}.ts`), ...args], { cwd: ROOT, stdio: 'inherit' });
		const forward = (sig: NodeJS.Signals) => child.kill(sig);
		process.on('SIGINT', forward).on('SIGTERM', forward);
		child.once('exit', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
	});
	if (code !== 0) {
		console.error(`[bench] loop-${part}: failed (exit ${code})`);
		failed = true;
	}
}
process.exit(failed ? 1 : 0);
