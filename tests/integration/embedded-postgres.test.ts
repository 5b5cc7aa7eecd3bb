import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/lib/server/db/embedded';
import { freePort } from '../helpers/ports';
import { spawn } from 'node:child_process';

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

function alive(pid: number) {
	try {
		process.kill(pid, 0);
		return true;
	} catch {
		return false;
	}
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

	it('reuses a server left running by a process that was killed', async () => {
		const port = await freePort();
		// A separate node process starts the server and is then killed with SIGKILL.
		const child = spawn(
			process.execPath,
			['--import', 'tsx', '-e', `import('./src/lib/server/db/embedded.js').then(m => m.startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)}, port: ${port} })).then(s => console.log('pid=' + s.pid))`],
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
		const until = Date.now() + 10_000;
		while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
		expect(alive(pid)).toBe(false);
	}, 60_000);

	it('starts after a crash that left a stale postmaster.pid behind', async () => {
		const port = await freePort();
		const a = await startEmbeddedPostgres({ dataDir: dir, port });
		started.push(a);
		const pidFile = path.join(dir, 'pg', 'postmaster.pid');
		const content = readFileSync(pidFile, 'utf8');
		process.kill(a.pid, 'SIGKILL');
		const until = Date.now() + 10_000;
		while (alive(a.pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
		// Postgres leaves the pid file; make sure it is really there with a dead pid.
		if (!existsSync(pidFile)) writeFileSync(pidFile, content);
		// Children of the killed postmaster exit on their own; give them a moment.
		await new Promise((r) => setTimeout(r, 500));
		const b = await startEmbeddedPostgres({ dataDir: dir, port });
		started.push(b);
		expect(b.owned).toBe(true);
		expect(b.pid).not.toBe(a.pid);
		expect(await query(b.url, 'select v from kept')).toEqual([{ v: 'still here' }]);
		await b.stop();
	}, 60_000);
});
