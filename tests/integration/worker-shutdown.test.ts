import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { enqueueJob } from '../../src/lib/server/jobs/enqueue';
import { createTestDatabase } from '../helpers/db';
import { startTs } from '../helpers/spawn';
import { scaled } from '../helpers/time';

describe('worker shutdown', () => {
	it(
		'records the outcome of a job that is running when SIGTERM arrives',
		async () => {
			const url = await createTestDatabase();
			const sql = postgres(url, { max: 2, onnotice: () => undefined });
			const { child, log, exited } = startTs('tests/helpers/worker-child.ts', [], { DATABASE_URL: url, NOMOS_WORKER_CONCURRENCY: '1' });
			const waitFor = async (text: string) => {
				const until = Date.now() + scaled(30_000);
				while (!log.out.includes(text)) {
					if (Date.now() > until) throw new Error(`never saw "${text}":\n${log.out}`);
					await new Promise((r) => setTimeout(r, 20));
				}
			};
			try {
				await waitFor('worker ready');
				await enqueueJob(sql, 'test__slow', { ms: 1500 });
				await waitFor('slow job started');
				const [locked] = await sql`select locked_by from graphile_worker.jobs where task_identifier = 'test__slow'`;
				expect(locked?.locked_by, log.out).toBeTruthy();

				child.kill('SIGTERM');
				expect((await exited).code).toBe(0);
				expect(log.out).toContain('slow job finished');
				// A completed job is deleted; a job left locked would have been retried hours later.
				const left = await sql`select id, locked_by, attempts, last_error from graphile_worker.jobs where task_identifier = 'test__slow'`;
				expect(left).toEqual([]);
			} finally {
				child.kill('SIGKILL');
				await sql.end();
			}
		},
		scaled(60_000)
	);
});
