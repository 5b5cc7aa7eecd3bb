// A worker killed with SIGKILL in the middle of a turn must not wedge its session: graphile-worker
// keeps the dead worker's `session:<id>` queue locked for hours, so the next message would wait
// behind it. Worker processes beat; locks of workers whose process stopped beating are released.
import type { RequestEvent } from '@sveltejs/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { countLiveWorkers } from '../../src/lib/server/db/queries/workers';
import { chatRouter } from '../../src/lib/server/trpc/routers/chat';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { startScriptedLlm, type ScriptedLlm } from '../doubles/llm/server';
import { useTestDatabase } from '../helpers/db';
import { newOperator, waitUntil } from '../helpers/executions';
import { startWorkerChild } from '../helpers/spawn';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();
let llm: ScriptedLlm;

beforeAll(async () => {
	llm = await startScriptedLlm();
});
afterAll(async () => {
	await llm?.close();
});

function startWorker() {
	return startWorkerChild(dbUrl(), { OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test', NOMOS_MODEL: 'scripted' });
}

describe('a worker killed mid-turn', () => {
	it(
		'leaves the session answerable: the next message is answered within 60 s of the kill',
		async () => {
			const operatorId = await newOperator('crash-admin');
			const chat = createCallerFactory(chatRouter)({ user: { id: operatorId, username: 'crash-admin', role: 'admin' }, event: {} as RequestEvent } as never);
			llm.push({ fault: 'hang' });
			const first = startWorker();
			let second: ReturnType<typeof startWorkerChild> | undefined;
			try {
				await waitUntil(
					async () => (await countLiveWorkers(sql())) === 1,
					() => `the worker to announce itself:\n${first.log.out}`,
					{ timeoutMs: 30_000 }
				);
				const { sessionId } = await chat.send({ text: 'what runs on strong?' });
				// The turn is running in the child, stuck on the hanging model request.
				await waitUntil(
					async () => llm.requests.length === 1,
					() => `the turn to reach the model:\n${first.log.out}`,
					{ timeoutMs: 30_000 }
				);
				first.child.kill('SIGKILL');
				expect((await first.exited).signal).toBe('SIGKILL');
				const killedAt = Date.now();

				llm.push({ text: 'Three containers run on strong.' });
				const { messageId } = await chat.send({ sessionId, text: 'hello? still there?' });
				second = startWorker();
				const answered = await waitUntil(
					async () => {
						const rows = await sql()<{ seq: number; text: string }[]>`
						select seq, p->>'text' as text from messages, jsonb_array_elements(parts) p
						where session_id = ${sessionId} and role = 'assistant' and status = 'complete' and p->>'text' like 'Three containers%'`;
						return rows[0] ?? null;
					},
					() => `the second message to be answered:\n${second?.log.out}`,
					{ timeoutMs: 75_000, intervalMs: 250 }
				);
				const after = Date.now() - killedAt;
				expect(after).toBeLessThan(60_000);
				const [mine] = await sql()`select status, seq from messages where id = ${messageId}`;
				expect(mine.status).toBe('complete');
				expect(Number(answered.seq)).toBeGreaterThan(Number(mine.seq));
				// The interrupted turn is marked, not left "thinking".
				await waitUntil(
					async () => {
						const [m] = await sql()`select count(*)::int as n from messages where session_id = ${sessionId} and status = 'streaming'`;
						return m.n === 0;
					},
					'no message left streaming',
					{ timeoutMs: 75_000, intervalMs: 500 }
				);
				console.log(`[turn-crash] next message answered ${after} ms after the kill`);
			} finally {
				first.child.kill('SIGKILL');
				second?.child.kill('SIGTERM');
				if (second) await Promise.race([second.exited, new Promise((r) => setTimeout(r, 15_000))]);
				second?.child.kill('SIGKILL');
			}
		},
		scaled(150_000)
	);
});
