// Under load, free worker slots go first to the jobs someone waits for: a turn or continuation
// (the operator reads the reply), then an approved execution; syncs, sweeps and pruning last.
import { parseCrontab, runOnce } from 'graphile-worker';
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { enqueueJob, gateJobsOn, PRIORITY } from '../../src/lib/server/jobs/enqueue';
import { crontab } from '../../src/lib/server/jobs/schedule';
import { requestTurn } from '../../src/lib/server/conversation/turn-queue';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { startWorker } from '../../src/lib/server/jobs/worker';
import { useTestDatabase } from '../helpers/db';
import { waitUntil } from '../helpers/executions';

const dbUrl = useTestDatabase();

describe('job priorities', () => {
	it('a job added while the worker schema is still being checked waits for the check, and fails with its error', async () => {
		const count = async () => Number((await sql()`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'test__gated'`)[0].n);
		let pass = () => undefined as void;
		const gate = new Promise<void>((r) => (pass = r));
		// A gate that says when it is awaited: then the job is held at it (not by how long we looked).
		let atGate = () => undefined as void;
		const held = new Promise<void>((r) => (atGate = r));
		gateJobsOn({ then: (ok: () => void, ko: (e: unknown) => void) => (atGate(), gate.then(ok, ko)) } as unknown as Promise<void>);
		try {
			let added = false;
			const adding = enqueueJob(sql(), 'test__gated', {}).then(() => (added = true));
			await held;
			expect(added).toBe(false);
			expect(await count()).toBe(0);
			pass();
			await adding;
			expect(await count()).toBe(1);

			const refused = Promise.reject(new Error('graphile-worker migration 000019 failed'));
			refused.catch(() => undefined);
			gateJobsOn(refused);
			await expect(enqueueJob(sql(), 'test__gated', {})).rejects.toThrow('migration 000019 failed');
			expect(await count()).toBe(1);
		} finally {
			gateJobsOn(Promise.resolve());
		}
	});

	it('a busy worker takes the reply first, then the execution, then the background work, whatever order they came in', async () => {
		const ran: string[] = [];
		const record = (name: string) => () => void ran.push(name);
		await enqueueJob(sql(), 'test__sync', {}, { priority: PRIORITY.background });
		await enqueueJob(sql(), 'test__sync', {}, { priority: PRIORITY.background });
		await enqueueJob(sql(), 'test__run', {}, { priority: PRIORITY.execution });
		await enqueueJob(sql(), 'test__reply', {}, { priority: PRIORITY.reply });
		await enqueueJob(sql(), 'test__plain', {});
		await runOnce({
			connectionString: dbUrl(),
			concurrency: 1,
			taskList: { test__sync: record('sync'), test__run: record('run'), test__reply: record('reply'), test__plain: record('plain') }
		});
		expect(ran).toEqual(['reply', 'run', 'plain', 'sync', 'sync']);
	});

	it('an approved execution has slots of its own: it starts while every shared slot is held by a long turn', async () => {
		let releaseTurn = () => undefined as void;
		const turnHeld = new Promise<void>((r) => (releaseTurn = r));
		const started: string[] = [];
		let execStarted = () => undefined as void;
		const execRan = new Promise<void>((r) => (execStarted = r));
		const worker = await startWorker({
			url: dbUrl(),
			concurrency: 1,
			taskList: {
				test__turn: async () => {
					started.push('turn');
					await turnHeld;
				},
				test__exec: () => {
					started.push('exec');
					execStarted();
				}
			},
			lane: { tasks: ['test__exec'], concurrency: 1 }
		});
		try {
			await enqueueJob(sql(), 'test__turn', {}, { priority: PRIORITY.reply });
			// The turn holds the one shared slot before the execution comes.
			await waitUntil(async () => started.includes('turn'), 'the turn to start');
			await enqueueJob(sql(), 'test__exec', {}, { priority: PRIORITY.execution });
			await Promise.race([execRan, new Promise((_, rej) => setTimeout(() => rej(new Error('the execution waited for the turn')), 5000))]);
			expect(started).toEqual(['turn', 'exec']);
		} finally {
			releaseTurn();
			await worker.stop();
		}
	});

	it('turns are queued as replies; the recurring jobs as background', async () => {
		const sessionId = await sql().begin((tx) => createSession(tx, null, 'prio'));
		await sql().begin((tx) => requestTurn(tx, { sessionId, origin: 'chat' }));
		const [job] = await sql()<
			{ priority: number }[]
		>`select priority from graphile_worker.jobs where task_identifier = 'agent__run_turn' and queue_name = ${'session:' + sessionId}`;
		expect(job.priority).toBe(PRIORITY.reply);
		const items = parseCrontab(crontab({ inventorySync: true }));
		expect(items.map((i) => [i.task, i.options.priority])).toEqual([
			['inventory__sync', PRIORITY.background],
			['events__prune', PRIORITY.background]
		]);
	});
});
