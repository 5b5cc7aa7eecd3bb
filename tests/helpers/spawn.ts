import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { scaled } from './time';

/** Runs a TypeScript file in a child node process (tsx loaded in-process, so signals reach it). */
export function spawnTs(file: string, args: string[] = [], opts: SpawnOptions = {}) {
	return spawn(process.execPath, ['--import', 'tsx', file, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
}

export function spawnTsSync(file: string, args: string[] = [], opts: { env?: NodeJS.ProcessEnv; timeout?: number } = {}) {
	return spawnSync(process.execPath, ['--import', 'tsx', file, ...args], { encoding: 'utf8', ...opts });
}

export type ChildExit = { code: number | null; signal: NodeJS.Signals | null };

/**
 * The child's exit, or an error after `ms` (scaled) that shows its log as it is then: a test
 * waiting on an exit that never comes fails saying what the child did, not at the test's limit.
 */
export async function exitWithin(c: TsChild, ms: number, what = 'the child to exit'): Promise<ChildExit> {
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error(`timed out waiting for ${what} (pid ${c.pid}):\n${c.log.out}`)), scaled(ms));
	});
	try {
		return await Promise.race([c.exited, late]);
	} finally {
		clearTimeout(timer);
	}
}

/** A child started by `startTs`: its output so far (for failure messages) and its exit. */
export interface TsChild {
	child: ChildProcess;
	pid: number;
	log: { out: string };
	exited: Promise<ChildExit>;
}

/** `spawnTs` with `env` over this process's environment, stdout and stderr gathered in `log.out`. */
export function startTs(file: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): TsChild {
	const child = spawnTs(file, args, { env: { ...process.env, ...env } });
	const log = { out: '' };
	child.stdout!.on('data', (d) => (log.out += d));
	child.stderr!.on('data', (d) => (log.out += d));
	const exited = new Promise<ChildExit>((res) => child.once('exit', (code, signal) => res({ code, signal })));
	return { child, pid: child.pid!, log, exited };
}

/** What a worker child runs without: inventory syncs, configured hosts, a knowledge folder, a seeded operator. */
export const QUIET_WORKER_ENV = {
	NOMOS_INVENTORY_SYNC: 'off',
	NOMOS_WORKER: 'on',
	NOMOS_WORKER_CONCURRENCY: '2',
	NOMOS_HOSTS: '',
	NOMOS_KNOWLEDGE_DIR: '',
	NOMOS_OPERATOR_PASSWORD: ''
} as const;

/**
 * A worker process as `npm run worker` starts it (tests/helpers/worker-child.ts: the app's task
 * list and shutdown handling) on `DATABASE_URL`, with QUIET_WORKER_ENV and then `env`.
 */
export function startWorkerChild(databaseUrl: string, env: NodeJS.ProcessEnv = {}): TsChild {
	return startTs('tests/helpers/worker-child.ts', [], { DATABASE_URL: databaseUrl, ...QUIET_WORKER_ENV, ...env });
}
