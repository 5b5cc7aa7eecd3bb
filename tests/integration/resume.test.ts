// Issue #27, "the system picks itself up": the work of a worker process that dies (SIGKILL) or
// stops (SIGTERM) is taken up by another process — no resend, no "continue", nothing run twice.
// Real worker processes, a real Postgres, the SSH double and the scripted model.
import type { RequestEvent } from '@sveltejs/kit';
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { listDeadProcesses } from '../../src/lib/server/db/queries/workers';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { chatRouter } from '../../src/lib/server/trpc/routers/chat';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { DEBIAN, requestApproved, newOperator, newSession, waitUntil } from '../helpers/executions';
import type { TsChild } from '../helpers/spawn';
import { STRONG_CADDY, useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { llm, pve, spawnWorker: startWorker, workersReady: ready } = useStage({ model: { keep: true }, spawned: true, sync: false, hosts: [STRONG_CADDY] });
type Worker = TsChild;

function chatAs(operatorId: string) {
	return createCallerFactory(chatRouter)({ user: { id: operatorId, username: 'resume-admin', role: 'admin' }, event: {} as RequestEvent } as never);
}

type Reply = {
	id: string;
	status: string;
	origin: string;
	runner: string | null;
	parts: Array<{ type: string; text?: string; data?: { kind?: string; text?: string } }>;
};

async function replies(sessionId: string): Promise<Reply[]> {
	return sql()<Reply[]>`select id, status, origin, runner, parts from messages where session_id = ${sessionId} and role = 'assistant' order by seq`;
}

/** The worker process (of those given) that runs the session's streaming reply. */
async function runnerOf(sessionId: string, workers: Array<Worker>) {
	const [row] = await sql()<{ pid: number }[]>`
		select w.pid from messages m join worker_processes w on w.id = m.runner
		where m.session_id = ${sessionId} and m.status = 'streaming'`;
	return workers.find((w) => w.pid === row?.pid);
}

const text = (r: Reply) =>
	r.parts
		.filter((p) => p.type === 'text')
		.map((p) => p.text)
		.join('');
const notes = (r: Reply) => r.parts.filter((p) => p.type === 'data-note').map((p) => p.data?.kind);
const RESEND = /send (your message )?again|reply to continue/i;

describe('a reply whose worker process dies', () => {
	it(
		'is resumed by another worker in the same bubble: the operator sends nothing, nothing says "send again"',
		async () => {
			const operatorId = await newOperator('resume-a');
			const a = startWorker();
			const b = startWorker();
			await Promise.all([ready(a), ready(b)]);
			llm.reset();
			llm.push({ fault: 'hang' }, { text: 'All three containers on strong are running.' });
			const { sessionId } = await chatAs(operatorId).send({ text: 'what runs on strong?' });
			await waitUntil(async () => llm.requests.length === 1, 'the turn to reach the model', { timeoutMs: 30_000 });
			const victim = await waitUntil(() => runnerOf(sessionId, [a, b]), 'the reply to have a runner');
			const [streaming] = await replies(sessionId);
			victim.child.kill('SIGKILL');
			expect((await victim.exited).signal).toBe('SIGKILL');

			const done = await waitUntil(
				async () => {
					const rs = await replies(sessionId);
					return rs.length === 1 && rs[0].status === 'complete' ? rs[0] : null;
				},
				'the same reply to be completed by the other worker',
				{ timeoutMs: 60_000, intervalMs: 100 }
			);
			expect(done.id).toBe(streaming.id);
			expect(text(done)).toContain('All three containers on strong are running.');
			expect(notes(done)).toContain('resumed');
			expect(JSON.stringify(done.parts)).not.toMatch(RESEND);
			const [{ users }] = await sql()<{ users: number }[]>`select count(*)::int as users from messages where session_id = ${sessionId} and role = 'user'`;
			expect(users).toBe(1);
			expect(llm.requests).toHaveLength(2);
			expect(await listDeadProcesses(sql())).toEqual([]);
		},
		scaled(150_000)
	);

	it(
		'is handed over at once on SIGTERM (the process does not wait for the model) and finished by another worker',
		async () => {
			const operatorId = await newOperator('resume-b');
			const a = startWorker();
			const b = startWorker();
			await Promise.all([ready(a), ready(b)]);
			llm.reset();
			llm.push({ fault: 'hang' }, { text: 'Done looking: caddy is up.' });
			const { sessionId } = await chatAs(operatorId).send({ text: 'is caddy up?' });
			await waitUntil(async () => llm.requests.length === 1, 'the turn to reach the model', { timeoutMs: 30_000 });
			const victim = await waitUntil(() => runnerOf(sessionId, [a, b]), 'the reply to have a runner');
			victim.child.kill('SIGTERM');
			// A hanging model must not hold the stop up (graphile-worker's grace period is 10 s).
			expect((await victim.exited).signal).toBe(null);
			expect(victim.log.out).not.toMatch(/Stopped by the operator/);
			const done = await waitUntil(
				async () => {
					const rs = await replies(sessionId);
					return rs.length === 1 && rs[0].status === 'complete' ? rs[0] : null;
				},
				'the reply to be finished by the other worker',
				{ timeoutMs: 60_000, intervalMs: 100 }
			);
			expect(text(done)).toContain('Done looking: caddy is up.');
			expect(notes(done)).toEqual(['resumed']);
			expect(JSON.stringify(done.parts)).not.toMatch(/cancelled|Stopped by the operator/);
		},
		scaled(150_000)
	);
});

describe('an approved execution whose worker dies before starting it', () => {
	it(
		'is run once by another worker, not stranded in `approved`',
		async () => {
			const operatorId = await newOperator('resume-c');
			const sessionId = await newSession(operatorId);
			llm.reset();
			llm.setFallback(() => ({ text: 'Noted.' }));
			const slow = startWorker({ SLOW_RUN_START_MS: '600000', NOMOS_EXECUTION_CONCURRENCY: '1' });
			await ready(slow);
			const { id } = await requestApproved(sessionId, operatorId, {
				target: 'strong',
				action: 'pct_create',
				params: { hostname: 'stranded', template: DEBIAN },
				reason: 'r'
			});
			await waitUntil(
				async () => slow.log.out.includes(`run job taken {"executionId":"${id}"}`),
				() => `the slow worker to take the job:\n${slow.log.out}`,
				{
					timeoutMs: 30_000
				}
			);
			slow.child.kill('SIGKILL');
			await slow.exited;
			expect((await getExecution(sql(), id))!.status).toBe('approved');
			const b = startWorker();
			await ready(b);
			const e = await waitUntil(
				async () => {
					const e = await getExecution(sql(), id);
					return e && ['succeeded', 'failed', 'interrupted'].includes(e.status) ? e : null;
				},
				() => `the execution to run in the other worker:\n${b.log.out}`,
				{ timeoutMs: 60_000, intervalMs: 100 }
			);
			expect(e.status).toBe('succeeded');
			expect((await pve.argvLog()).filter((a) => a[0] === 'pct' && a[1] === 'create' && a.some((x) => x.includes('stranded')))).toHaveLength(1);
		},
		scaled(150_000)
	);
});
