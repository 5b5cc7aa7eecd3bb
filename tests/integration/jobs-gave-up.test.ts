// A background job that uses up its attempts says why where an operator looks: the list the Ops
// page and /readyz read (task, reason, count, when), announced on the fleet stream the moment
// the last failure is written; admins dismiss or re-run it, audited. Reasons reach a public
// probe, so URLs keep only their host and secrets are masked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { listGaveUpJobs, maskReason } from '../../src/lib/server/db/queries/jobs';
import { enqueueJob } from '../../src/lib/server/jobs/enqueue';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import { checkReadiness } from '../../src/lib/server/health/readiness';
import { jobsRouter } from '../../src/lib/server/trpc/routers/jobs';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { GET as readyz } from '../../src/routes/readyz/+server';
import { useTestDatabase } from '../helpers/db';
import { newOperator, waitUntil } from '../helpers/executions';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();

const SECRET_URL = 'https://nomos:hunter2@hooks.example.net/topic-s3cr3t/send?token=abc123';
let worker: WorkerHandle | undefined;
let tries = 0;

beforeAll(async () => {
	worker = await startWorker({
		url: dbUrl(),
		concurrency: 1,
		taskList: {
			test__always_fails: async () => {
				tries++;
				throw new Error(`POST ${SECRET_URL} answered 502 (Authorization: Bearer sk-live-999)`);
			}
		}
	});
});
afterAll(async () => {
	await worker?.stop();
});

const jobsEvents = async () =>
	(await sql()<{ payload: { change: string; tasks: string[] } }[]>`select payload from events where type = 'jobs.changed' order by id`).map((e) => e.payload);

async function exhaustedJob(task: string, error: string): Promise<string> {
	const [{ id }] = await sql()<{ id: string }[]>`
		select id::text from graphile_worker.add_job(${task}, '{}'::json, run_at => now() + interval '1 day', max_attempts => 3)`;
	await sql()`select graphile_worker.permanently_fail_jobs(array[${id}::bigint], ${error})`;
	return id;
}

function callers() {
	const make = createCallerFactory(jobsRouter);
	return {
		as: (id: string, role: 'admin' | 'operator') => make({ user: { id, username: `${role}-${id.slice(0, 4)}`, role }, event: {} } as never)
	};
}

describe('jobs that gave up', () => {
	it(
		'a task that always throws ends in the list with its reason and count, announced, and /readyz is degraded but ready',
		async () => {
			expect(await listGaveUpJobs(sql())).toEqual([]);
			await enqueueJob(sql(), 'test__always_fails', { webhookUrl: SECRET_URL }, { maxAttempts: 2 });
			const before = Date.now();
			const [group] = await waitUntil(
				async () => {
					const l = await listGaveUpJobs(sql());
					return l.length ? l : null;
				},
				'the job to use up its two attempts',
				{ timeoutMs: 20_000, intervalMs: 100 }
			);
			expect(tries).toBe(2);
			expect(group).toMatchObject({ task: 'test__always_fails', count: 1, retryable: false });
			expect(group.reason).toBe('POST https://hooks.example.net/… answered 502 (Authorization: Bearer •••)');
			// When the last attempt failed, recovered from graphile-worker's backoff arithmetic.
			expect(Math.abs(Date.parse(group.lastAt) - before)).toBeLessThan(15_000);
			expect(Date.parse(group.lastAt)).toBeLessThanOrEqual(Date.now());
			// The fleet stream hears it once, after the failure was written (the first failure is not giving up).
			await waitUntil(async () => (await jobsEvents()).length === 1, 'the jobs.changed event');
			expect(await jobsEvents()).toEqual([{ change: 'gave_up', tasks: ['test__always_fails'] }]);

			const r = await checkReadiness(sql());
			expect(r.warnings).toEqual(['jobs']);
			expect(r.jobs).toMatchObject({ ok: false, gaveUp: 1, tasks: [{ task: 'test__always_fails', count: 1 }] });
			// The route: ready (200) but "degraded"; the probe is public, so nothing secret is in it.
			const res = await (readyz as unknown as (e: never) => Promise<Response>)({} as never);
			const text = await res.text();
			expect(res.status, text).toBe(200);
			const body = JSON.parse(text) as { status: string; warnings: string[]; jobs: { tasks: { task: string; reason: string }[] } };
			expect(body.status).toBe('degraded');
			expect(body.warnings).toEqual(['jobs']);
			expect(body.jobs.tasks.map((t) => t.task)).toEqual(['test__always_fails']);
			for (const secret of ['hunter2', 's3cr3t', 'abc123', 'sk-live-999', 'webhookUrl']) expect(text).not.toContain(secret);
		},
		scaled(30_000)
	);

	it('admins dismiss or re-run a group up to what they saw, audited and announced; operators only look', async () => {
		const admin = await newOperator('jobs-admin');
		const op = await newOperator('jobs-operator');
		const { as } = callers();
		const sync1 = await exhaustedJob('inventory__sync', 'boom one');
		const sync2 = await exhaustedJob('inventory__sync', 'boom two');
		const turn = await exhaustedJob('agent__run_turn', 'model server down');
		const list = await as(op, 'operator').gaveUp();
		const sync = list.find((g) => g.task === 'inventory__sync')!;
		expect(sync).toMatchObject({ count: 2, upToId: sync2, retryable: true });
		expect(list.find((g) => g.task === 'agent__run_turn')).toMatchObject({ count: 1, reason: 'model server down', retryable: false });

		await expect(as(op, 'operator').dismiss({ task: 'agent__run_turn', upToId: turn })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		await expect(as(admin, 'admin').retry({ task: 'agent__run_turn', upToId: turn })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
		await expect(as(admin, 'admin').dismiss({ task: 'rm -rf /', upToId: turn })).rejects.toMatchObject({ code: 'BAD_REQUEST' });

		// A third sync gives up after the operator looked: the action stops at what they saw.
		const sync3 = await exhaustedJob('inventory__sync', 'boom three');
		expect(await as(admin, 'admin').retry({ task: 'inventory__sync', upToId: sync.upToId })).toEqual({ count: 2 });
		const rerun = await sql()<{ id: string; attempts: number; lastError: string | null; due: boolean }[]>`
			select id::text, attempts, last_error as "lastError", run_at <= now() as due from graphile_worker._private_jobs where id = any(${[sync1, sync2, sync3]}::bigint[]) order by id`;
		expect(rerun).toEqual([
			{ id: sync1, attempts: 0, lastError: null, due: true },
			{ id: sync2, attempts: 0, lastError: null, due: true },
			{ id: sync3, attempts: 3, lastError: 'boom three', due: false }
		]);
		expect(await as(admin, 'admin').dismiss({ task: 'agent__run_turn', upToId: turn })).toEqual({ count: 1 });
		expect((await listGaveUpJobs(sql())).map((g) => [g.task, g.count])).toEqual(expect.arrayContaining([['inventory__sync', 1]]));
		expect((await listGaveUpJobs(sql())).some((g) => g.task === 'agent__run_turn')).toBe(false);

		const audit = await sql()<{ action: string; subjectId: string; detail: { count: number }; actor: string }[]>`
			select action, subject_id as "subjectId", detail, actor_id::text as actor from audit_log where action like 'jobs.%' order by id`;
		expect(audit).toEqual([
			{ action: 'jobs.retried', subjectId: 'inventory__sync', detail: { count: 2 }, actor: admin },
			{ action: 'jobs.dismissed', subjectId: 'agent__run_turn', detail: { count: 1 }, actor: admin }
		]);
		expect((await jobsEvents()).slice(-2)).toEqual([
			{ change: 'retried', tasks: ['inventory__sync'] },
			{ change: 'dismissed', tasks: ['agent__run_turn'] }
		]);
		// Nothing left to act on: no audit entry, no event.
		expect(await as(admin, 'admin').dismiss({ task: 'agent__run_turn', upToId: turn })).toEqual({ count: 0 });
		expect(await sql()`select 1 from audit_log where action like 'jobs.%'`).toHaveLength(2);
	});
});

describe('maskReason', () => {
	it('keeps which endpoint, never its credentials, path, query or a token', () => {
		expect(maskReason('webhook ntfy: POST http://ntfy.lan/nomos-7f3k failed: ECONNREFUSED')).toBe('webhook ntfy: POST http://ntfy.lan/… failed: ECONNREFUSED');
		expect(maskReason('GET https://u:p@api.example.com:8443 401')).toBe('GET https://api.example.com:8443 401');
		expect(maskReason('to https://h.example: refused; see https://h.example/x/y.')).toBe('to https://h.example: refused; see https://h.example/….');
		expect(maskReason('password=swordfish token: t0k3n api_key=AKIA1')).toBe('password=••• token: ••• api_key=•••');
		expect(maskReason('(Authorization: Basic dTpw) bearer abc.def')).toBe('(Authorization: Basic •••) bearer •••');
		expect(maskReason('x'.repeat(400))).toHaveLength(300);
		expect(maskReason('its worker process died while running it (attempt 1 of 25)')).toBe('its worker process died while running it (attempt 1 of 25)');
	});
});
