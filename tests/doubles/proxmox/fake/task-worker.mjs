// The worker a forked PVE task runs in (see forkTask in pct-create.mjs): waits, then does the
// task's work and records that it finished, unless it is killed first.
import { join } from 'node:path';
import { Exit, appendLine, context, readFaults, sleep } from './common.mjs';
import { finishCreate } from './pct-create.mjs';

const { task, args, ms } = JSON.parse(process.argv[2] ?? '{}');
const ctx = context();

async function main() {
	await sleep(ms);
	if (task !== 'create') throw new Exit(70, `fake task worker: unknown task '${task}'`);
	await finishCreate(ctx, args, readFaults(ctx).create);
	appendLine(join(ctx.state, 'tasks.log'), JSON.stringify({ worker: process.pid, done: true }));
}

main().then(
	() => process.exit(0),
	(e) => {
		appendLine(join(ctx.state, 'tasks.log'), JSON.stringify({ worker: process.pid, done: true, failed: true }));
		if (e instanceof Exit) {
			if (e.message) process.stderr.write(e.message.endsWith('\n') ? e.message : e.message + '\n');
			process.exit(e.code);
		}
		process.stderr.write(`fake task worker internal error: ${e?.stack ?? e}\n`);
		process.exit(70);
	}
);
