import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/lib/server/db/embedded';
import { freePort } from '../helpers/ports';
import { spawn, type ChildProcess } from 'node:child_process';
// alive() counts a zombie as gone: stop() returns once the postmaster has exited, and Node may not
// have reaped its child yet (seen once in CI: kill(0) still answered for the unreaped pid).
import { alive, waitUntil } from '../helpers/executions';
import { startTs } from '../helpers/spawn';
import { scaled } from '../helpers/time';

const dir = path.resolve('tests/.tmp', `embedded-${process.pid}`);
const started: EmbeddedPostgres[] = [];

async function query(url: string, q: string) {
	const sql = postgres(url, { max: 1, onnotice: () => undefined });
	try {
		return await sql.unsafe(q);
	} finally {
		await sql.end();
	}
}

/** The pids whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
	const out: number[] = [];
	for (const name of readdirSync('/proc')) {
		if (!/^\d+$/.test(name)) continue;
		try {
			const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
			// pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
			if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(name));
		} catch {
			/* gone meanwhile */
		}
	}
	return out;
}

afterAll(async () => {
	for (const s of started) await s.stop();
	for (const s of started) if (alive(s.pid)) process.kill(s.pid, 'SIGKILL');
	await fs.rm(dir, { recursive: true, force: true });
});

describe('embedded Postgres', () => {
	it('initialises, keeps data across a clean stop and restart', async () => {
		const port = await freePort();
		const a = await startEmbeddedPostgres({ dataDir: dir, port });
		started.push(a);
		expect(a.owned).toBe(true);
		await query(a.url, 'create table kept (v text); insert into kept values ($$still here$$)');
		await a.stop();
		expect(alive(a.pid)).toBe(false);
		expect(existsSync(path.join(dir, 'pg', 'postmaster.pid'))).toBe(false);

		const b = await startEmbeddedPostgres({ dataDir: dir, port });
		started.push(b);
		expect(b.owned).toBe(true);
		expect(await query(b.url, 'select v from kept')).toEqual([{ v: 'still here' }]);
		await b.stop();
	});

	it(
		'reuses a server left running by a process that was killed',
		async () => {
			const port = await freePort();
			// A separate node process starts the server and is then killed with SIGKILL.
			const child = spawn(
				process.execPath,
				[
					'--import',
					'tsx',
					'-e',
					`import('./src/lib/server/db/embedded.js').then(m => m.startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)}, port: ${port} })).then(s => console.log('pid=' + s.pid))`
				],
				{ stdio: ['ignore', 'pipe', 'inherit'] }
			);
			const pid = await new Promise<number>((resolve) => {
				child.stdout.on('data', (d: Buffer) => {
					const m = /pid=(\d+)/.exec(d.toString());
					if (m) resolve(Number(m[1]));
				});
			});
			child.kill('SIGKILL');
			await new Promise((r) => child.once('exit', r));
			expect(alive(pid)).toBe(true);

			const reused = await startEmbeddedPostgres({ dataDir: dir, port });
			expect(reused.owned).toBe(false);
			expect(reused.pid).toBe(pid);
			expect(await query(reused.url, 'select v from kept')).toEqual([{ v: 'still here' }]);
			process.kill(pid, 'SIGINT');
			const until = Date.now() + scaled(10_000);
			while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
			expect(alive(pid)).toBe(false);
		},
		scaled(60_000)
	);

	it(
		'starts after a crash that left a stale postmaster.pid behind',
		async () => {
			const port = await freePort();
			const a = await startEmbeddedPostgres({ dataDir: dir, port });
			started.push(a);
			const pidFile = path.join(dir, 'pg', 'postmaster.pid');
			const content = readFileSync(pidFile, 'utf8');
			const children = childrenOf(a.pid);
			expect(children.length).toBeGreaterThan(0);
			process.kill(a.pid, 'SIGKILL');
			const until = Date.now() + scaled(10_000);
			while (alive(a.pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
			// Postgres leaves the pid file; make sure it is really there with a dead pid.
			if (!existsSync(pidFile)) writeFileSync(pidFile, content);
			// Children of the killed postmaster exit on their own (they notice its death): wait for each.
			await waitUntil(async () => children.every((pid) => !alive(pid)), `the killed postmaster's children (${children.join(', ')}) to exit`);
			const b = await startEmbeddedPostgres({ dataDir: dir, port });
			started.push(b);
			expect(b.owned).toBe(true);
			expect(b.pid).not.toBe(a.pid);
			expect(await query(b.url, 'select v from kept')).toEqual([{ v: 'still here' }]);
			await b.stop();
		},
		scaled(60_000)
	);

	describe('owned by the Nomos processes on its data dir', () => {
		const appDir = path.resolve('tests/.tmp', `embedded-app-${process.pid}`);
		const procs: ChildProcess[] = [];
		afterAll(async () => {
			for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
			const pid = postmasterPid();
			if (pid && alive(pid)) process.kill(pid, 'SIGINT');
			await fs.rm(appDir, { recursive: true, force: true });
		});

		let port = 0;
		/** A Nomos worker process (the app's boot, its signal handling) on the embedded server of appDir. */
		function startNomos() {
			const { child, log, exited } = startTs('tests/helpers/worker-child.ts', [], {
				DATABASE_URL: '',
				NOMOS_DATA_DIR: appDir,
				NOMOS_PG_PORT: String(port),
				OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
				OPENAI_API_KEY: 'test',
				NOMOS_MODEL: 'scripted',
				NOMOS_INVENTORY_SYNC: 'off',
				NOMOS_HOSTS: '',
				NOMOS_KNOWLEDGE_DIR: '',
				NOMOS_OPERATOR_PASSWORD: ''
			});
			procs.push(child);
			return {
				child,
				log,
				exited,
				ready: waitUntil(
					async () => log.out.includes('worker ready'),
					() => `the worker to boot:\n${log.out}`,
					{ timeoutMs: 120_000, intervalMs: 50 }
				)
			};
		}
		function postmasterPid(): number | null {
			try {
				return Number(readFileSync(path.join(appDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
			} catch {
				return null;
			}
		}
		async function gone(pid: number) {
			await waitUntil(async () => !alive(pid), `postgres ${pid} to stop`, { timeoutMs: 30_000 });
		}

		it(
			'a server left by a SIGKILLed Nomos is adopted by the next start and stopped by its graceful stop',
			async () => {
				port = await freePort();
				const first = startNomos();
				await first.ready;
				const pid = postmasterPid()!;
				first.child.kill('SIGKILL');
				await first.exited;
				expect(alive(pid)).toBe(true);

				const second = startNomos();
				await second.ready;
				expect(postmasterPid()).toBe(pid);
				second.child.kill('SIGTERM');
				expect(await second.exited, second.log.out).toEqual({ code: 0, signal: null });
				await gone(pid);
				expect(existsSync(path.join(appDir, 'pg', 'postmaster.pid'))).toBe(false);
				expect(second.log.out).toContain('adopting embedded Postgres');
			},
			scaled(300_000)
		);

		it(
			'a server a live Nomos owns is not adopted; its owner dying hands it to the live one, which stops it',
			async () => {
				port = await freePort();
				const owner = startNomos();
				await owner.ready;
				const pid = postmasterPid()!;
				const other = startNomos();
				await other.ready;
				expect(other.log.out).toContain('reusing embedded Postgres run by another live Nomos process');

				owner.child.kill('SIGKILL');
				await owner.exited;
				await waitUntil(
					async () => other.log.out.includes('this one stops it on shutdown now'),
					() => `the live process to inherit the server:\n${other.log.out}`
				);

				// A third start while that one lives does not take it over, and its stop leaves the server up.
				const third = startNomos();
				await third.ready;
				expect(third.log.out).toContain('reusing embedded Postgres run by another live Nomos process');
				third.child.kill('SIGTERM');
				expect(await third.exited, third.log.out).toEqual({ code: 0, signal: null });
				expect(alive(pid)).toBe(true);
				expect(
					await query(
						`postgres://postgres:${encodeURIComponent(readFileSync(path.join(appDir, 'pg-password'), 'utf8').trim())}@127.0.0.1:${port}/postgres`,
						'select 1 as one'
					)
				).toEqual([{ one: 1 }]);

				other.child.kill('SIGTERM');
				expect(await other.exited, other.log.out).toEqual({ code: 0, signal: null });
				await gone(pid);
			},
			scaled(240_000)
		);
	});
});
