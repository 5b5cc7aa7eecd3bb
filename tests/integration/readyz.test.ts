// /readyz against a real database: each check fails on its own and says so; /healthz needs none.
import fs from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { registerWorkerProcess, unregisterWorkerProcess } from '../../src/lib/server/db/queries/workers';
import { checkReadiness, PROBE_REUSE_MS, readinessAnswer, readinessProbe } from '../../src/lib/server/health/readiness';
import { isPublicPath } from '../../src/lib/server/auth/guard';
import { GET as readyz } from '../../src/routes/readyz/+server';
import { GET as healthz } from '../../src/routes/healthz/+server';
import { createTestDatabase, useTestDatabase } from '../helpers/db';
import { freePort } from '../helpers/ports';

useTestDatabase();

const workers: string[] = [];
afterEach(async () => {
	for (const id of workers.splice(0)) await unregisterWorkerProcess(sql(), id);
});

async function aliveWorker() {
	workers.push((await registerWorkerProcess(sql(), { hostname: 'test', pid: 1, workerIds: ['w1'] })).id);
}

type Handler = (event: never) => Response | Promise<Response>;
const call = async (h: unknown) => {
	const res = await (h as Handler)({} as never);
	return { status: res.status, body: (await res.json()) as { status: string; failed: string[] } };
};

describe('/readyz', () => {
	it('is ready with a reachable, migrated database and a live worker', async () => {
		await aliveWorker();
		const r = await checkReadiness(sql());
		expect(r).toMatchObject({ ready: true, failed: [], warnings: [], jobs: { ok: true, gaveUp: 0, tasks: [] } });
		expect(r.checks.worker.alive).toBe(1);
	});

	it('answers 503 naming the worker when no worker process beats', async () => {
		const r = await checkReadiness(sql());
		expect(r.ready).toBe(false);
		expect(r.failed).toEqual(['worker']);
		// the route: unauthenticated probe paths, 503 with the failed check
		const res = await call(readyz);
		expect(res.status).toBe(503);
		expect(res.body).toMatchObject({ status: 'not ready', failed: ['worker'] });
		// A probe reuses its result for a second of its clock, then checks anew.
		let clock = 0;
		const probe = readinessProbe(() => clock);
		expect((await probe(sql())).failed).toEqual(['worker']);
		await aliveWorker();
		clock += PROBE_REUSE_MS;
		expect((await probe(sql())).failed).toEqual(['worker']);
		clock += 1;
		expect(await probe(sql())).toMatchObject({ ready: true, failed: [] });
	});

	it('stays ready but warns, naming the task and why, when a background job gave up', async () => {
		await aliveWorker();
		const [{ id }] = await sql()<{ id: string }[]>`select id::text from graphile_worker.add_job('notify__webhook', '{}'::json, max_attempts => 5)`;
		await sql()`select graphile_worker.permanently_fail_jobs(array[${id}::bigint], 'webhook ntfy: POST https://ntfy.sh/s3cret-topic: 500 (giving up)')`;
		try {
			const r = await checkReadiness(sql());
			expect(r).toMatchObject({ ready: true, failed: [], warnings: ['jobs'] });
			expect(r.jobs.tasks).toEqual([
				expect.objectContaining({ task: 'notify__webhook', count: 1, reason: 'webhook ntfy: POST https://ntfy.sh/…: 500 (giving up)' })
			]);
			const res = JSON.parse(JSON.stringify(readinessAnswer(r))) as { status: number; body: unknown };
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ status: 'degraded', failed: [], warnings: ['jobs'] });
			expect(JSON.stringify(res.body)).not.toContain('s3cret');
		} finally {
			await sql()`select graphile_worker.complete_jobs(array[${id}::bigint])`;
		}
	});

	it('is not ready when the migrations this code expects are not applied', async () => {
		await aliveWorker();
		// this code has a migration the database lacks: a journal with a newer entry
		const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-journal-'));
		const journal = JSON.parse(await fs.readFile('drizzle/meta/_journal.json', 'utf8')) as { entries: Array<{ when: number; tag: string }> };
		journal.entries.push({ ...journal.entries.at(-1)!, when: Date.now() + 1e9, tag: '9999_future' });
		await fs.mkdir(path.join(dir, 'meta'));
		await fs.writeFile(path.join(dir, 'meta', '_journal.json'), JSON.stringify(journal));
		const r = await checkReadiness(sql(), { migrationsDir: dir });
		expect(r.failed).toEqual(['migrations']);
		expect(r.checks.migrations.error).toBe('older than this code expects');
		await fs.rm(dir, { recursive: true });

		// a database with no migrations at all
		const empty = postgres(await createTestDatabase({ empty: true }), { max: 1, onnotice: () => undefined });
		try {
			const e = await checkReadiness(empty);
			expect(e.failed).toEqual(['migrations', 'worker']);
			expect(e.checks.migrations.error).toBe('none applied');
			// No graphile-worker schema either: the jobs cannot be read, which is said, not hidden.
			expect(e.warnings).toEqual(['jobs']);
			expect(e.jobs.ok).toBe(false);
		} finally {
			await empty.end();
		}
	});

	it('is not ready, by its own deadline, when the database does not answer', async () => {
		// A server that accepts the connection and never says a word: the pool would wait for its
		// connect_timeout (60 s here); the check gives up at its own timeoutMs and says so.
		const sockets: net.Socket[] = [];
		const silent = net.createServer((socket) => void sockets.push(socket));
		await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
		const port = (silent.address() as AddressInfo).port;
		const down = postgres(`postgres://postgres:x@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => undefined, connect_timeout: 60 });
		try {
			const r = await checkReadiness(down, { timeoutMs: 500 });
			expect(r.failed).toEqual(['database', 'migrations', 'worker']);
			expect(r.checks.database.error).toBe('unreachable: no answer within 500 ms');
			expect(r).toMatchObject({ warnings: [], jobs: { ok: false, error: 'database unreachable' } });
			// never the connection string or its password
			expect(JSON.stringify(r)).not.toContain('postgres://');
		} finally {
			for (const socket of sockets) socket.destroy();
			await down.end({ timeout: 0 });
			await new Promise((done) => silent.close(done));
		}
	});

	it('is not ready when nothing listens on the database port', async () => {
		const down = postgres(`postgres://postgres:x@127.0.0.1:${await freePort()}/postgres`, { max: 1, onnotice: () => undefined, connect_timeout: 60 });
		try {
			const r = await checkReadiness(down, { timeoutMs: 60_000 });
			expect(r.failed).toEqual(['database', 'migrations', 'worker']);
			expect(r.checks.database.error).toBe('unreachable: ECONNREFUSED');
			expect(JSON.stringify(r)).not.toContain('postgres://');
		} finally {
			await down.end({ timeout: 0 });
		}
	});
});

describe('/healthz', () => {
	it('answers 200 without a database question, and both probes are public', async () => {
		const res = await call(healthz);
		expect(res.status).toBe(200);
		expect(res.body.status).toBe('ok');
		expect(isPublicPath('/healthz')).toBe(true);
		expect(isPublicPath('/readyz')).toBe(true);
		expect(isPublicPath('/readyzx')).toBe(false);
	});
});
