// The typed seams at run time (#34): what the compiler cannot see — a job added by hand or by an
// older version, an event row of a type this version does not know — is refused at the edge, by name.
// (The compile-time half is tests/unit/contracts.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { emitEvent, emitEventNow, type EventInput } from '../../src/lib/server/db/queries/events';
import { enqueueJob } from '../../src/lib/server/jobs/enqueue';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import { Hub } from '../../src/lib/server/realtime/hub';
import { eventStreamResponse, formatEvent } from '../../src/lib/server/realtime/sse';
import { taskList } from '../../tasks/index';
import { useTestDatabase } from '../helpers/db';
import { waitUntil } from '../helpers/executions';
import { readSse } from '../helpers/sse-client';

const dbUrl = useTestDatabase();
let hub: Hub;
let worker: WorkerHandle | undefined;

beforeAll(async () => {
	hub = new Hub(sql());
	await hub.start();
	worker = await startWorker({ url: dbUrl(), concurrency: 1, taskList });
});
afterAll(async () => {
	await worker?.stop();
	await hub.stop();
});

/** A job as graphile-worker keeps it: attempts made and the last error. */
async function job(id: string) {
	const [row] = await sql()<{ attempts: number; lastError: string | null; locked: boolean }[]>`
		select attempts, last_error as "lastError", locked_at is not null as locked from graphile_worker._private_jobs where id = ${id}`;
	return row;
}

describe('job payloads', () => {
	it('a task refuses a payload that does not fit its schema at its start, naming the task and the field', async () => {
		// As an older version, or a hand in psql, would add it: not through enqueueJob.
		const [{ id }] = await sql()<{ id: string }[]>`
			select id::text from graphile_worker.add_job('plans__advance', ${JSON.stringify({ plan: 'p1' })}::text::json, max_attempts => 1)`;
		const done = await waitUntil(async () => {
			const j = await job(id);
			return j && j.attempts === 1 && !j.locked ? j : null;
		}, 'the bad plans__advance job to fail');
		expect(done.lastError).toMatch(/^plans__advance: invalid payload: planId: /);
		// It did nothing: no plan was looked up, so no plan event either.
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from events where type = 'plan.updated'`;
		expect(n).toBe(0);
	});

	it('enqueueJob refuses a wrong payload before adding anything', async () => {
		const before = await sql()<
			{ n: number }[]
		>`select count(*)::int as n from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier = 'executions__run')`;
		// The compiler refuses this call; a caller that got past it (a cast, plain JS) meets the schema.
		const wrong = { planId: 'p1' } as unknown as { executionId: string };
		await expect(enqueueJob(sql(), 'executions__run', wrong)).rejects.toThrow(/^executions__run: invalid payload: executionId: /);
		const after = await sql()<
			{ n: number }[]
		>`select count(*)::int as n from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier = 'executions__run')`;
		expect(after[0].n).toBe(before[0].n);
	});
});

describe('events', () => {
	it('emitEvent refuses a payload that does not fit its type, naming the type and the field, and writes nothing', async () => {
		const last = hub.lastId;
		const wrong = { type: 'plan.updated', payload: { executionId: 'e1' } } as unknown as EventInput<'plan.updated'>;
		await expect(sql().begin((tx) => emitEvent(tx, wrong))).rejects.toThrow(/^event plan\.updated: planId: /);
		const unknown = { type: 'plan.updatd', payload: {} } as unknown as EventInput<'plan.updated'>;
		await expect(emitEventNow(sql(), unknown)).rejects.toThrow('unknown event type "plan.updatd"');
		// Only these two types: the worker this file runs writes its own presence events meanwhile.
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from events where id > ${last} and type in ('plan.updated', 'plan.updatd')`;
		expect(n).toBe(0);
	});

	it('the SSE serializer refuses a type the registry does not name: a stream skips that row and carries the next', async () => {
		const start = await emitEventNow(sql(), { type: 'workers.changed', payload: {} });
		// A row this version does not know (written by a newer one, or by hand).
		await sql()`insert into events (type, payload) values ('no.such.type', ${JSON.stringify({ secret: 'x' })}::text::jsonb)`;
		await emitEventNow(sql(), { type: 'workers.changed', payload: { alive: 7 } });
		await waitUntil(async () => hub.lastId >= start + 2, 'the hub to read the three events');

		// The worker this file runs writes its own events meanwhile (jobs.changed, its presence):
		// only the unknown type and this test's own rows (told by their payload) are recorded.
		const ours = (e: { type: string; data: Record<string, unknown> }, alive: number) =>
			e.type === 'no.such.type' || (e.type === 'workers.changed' && (e.data.payload as { alive?: number }).alive === alive);
		const seen = async (after: number) => {
			const ctrl = new AbortController();
			const res = eventStreamResponse({
				sql: sql(),
				hub,
				after,
				scope: { viewer: { id: '00000000-0000-4000-8000-00000000000a', role: 'admin' as const } },
				signal: ctrl.signal
			});
			const types: string[] = [];
			for await (const e of readSse(res)) {
				if (!ours(e, 7)) continue;
				types.push(e.type);
				if (e.type === 'workers.changed') break;
			}
			ctrl.abort();
			return types;
		};
		// Replayed from the table (the stream starts behind the hub).
		expect(await seen(start)).toEqual(['workers.changed']);

		// Live from the hub: the unknown row comes between two known ones.
		const ctrl = new AbortController();
		const res = eventStreamResponse({
			sql: sql(),
			hub,
			after: hub.lastId,
			scope: { viewer: { id: '00000000-0000-4000-8000-00000000000a', role: 'admin' as const } },
			signal: ctrl.signal
		});
		const live = (async () => {
			const got: Array<{ type: string; payload: unknown }> = [];
			for await (const e of readSse(res)) {
				if (!ours(e, 8)) continue;
				got.push({ type: e.type, payload: e.data.payload });
				if (e.type === 'workers.changed') break;
			}
			return got;
		})();
		await sql()`insert into events (type, payload) values ('no.such.type', '{}'::jsonb)`;
		await emitEventNow(sql(), { type: 'workers.changed', payload: { alive: 8 } });
		expect(await live).toEqual([{ type: 'workers.changed', payload: { alive: 8 } }]);
		ctrl.abort();

		const [row] = await sql()<{ id: number; type: string; payload: Record<string, unknown>; createdAt: string }[]>`
			select id::float8 as id, type, payload, created_at::text as "createdAt" from events where type = 'no.such.type' limit 1`;
		expect(() => formatEvent({ ...row, sessionId: null })).toThrow('unknown event type "no.such.type"');
	});
});
