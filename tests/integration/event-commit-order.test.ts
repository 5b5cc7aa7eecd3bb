// Event ids follow commit order (readers resume with `id > last`), and emitting an event holds no
// lock while the transaction goes on: a final id is given at commit (drizzle/0041). When the order
// lock was taken at the insert, an answer (its event, then its note's session row) and a turn
// saving its message (the session row, then its event) deadlocked, and Postgres killed one.
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { emitEvent, emitEventNow, latestEventId } from '../../src/lib/server/db/queries/events';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { raiseQuestion } from '../../src/lib/server/db/queries/questions';
import { insertTurnMessage } from '../../src/lib/server/agent/message-writer';
import { answerFromPanel } from '../../src/lib/server/questions/answer';
import { useTestDatabase, waitForLockWaiter } from '../helpers/db';
import { newOperator, newSession } from '../helpers/executions';

const dbUrl = useTestDatabase();

/** A promise and the function that settles it: a step of one transaction the test holds open. */
function gate() {
	let open = () => undefined as void;
	const opened = new Promise<void>((r) => (open = r));
	return { open, opened };
}

describe('event ids', () => {
	it('follow commit order: an event written first and committed last gets the larger id, and its NOTIFY names it', async () => {
		const a = postgres(dbUrl(), { max: 1, onnotice: () => undefined });
		const listener = postgres(dbUrl(), { max: 1, onnotice: () => undefined });
		const notified: number[] = [];
		await listener.listen('nomos_events', (p) => notified.push((JSON.parse(p) as { id: number }).id));
		try {
			const from = await latestEventId(sql());
			const written = gate();
			const commit = gate();
			const first = a.begin(async (tx) => {
				await emitEvent(tx, { type: 'inventory.synced', payload: { host: 'written-first' } });
				written.open();
				await commit.opened;
			});
			await written.opened;
			// Written second, committed first: no wait on the open transaction's event.
			await sql().begin((tx) => emitEvent(tx, { type: 'inventory.synced', payload: { host: 'committed-first' } }));
			commit.open();
			await first;
			const rows = await sql()<{ id: number; host: string }[]>`
				select id::float8 as id, payload->>'host' as host from events where id > ${from} and type = 'inventory.synced' order by id`;
			expect(rows.map((r) => r.host)).toEqual(['committed-first', 'written-first']);
			await expect.poll(() => notified.filter((id) => id > from)).toEqual(rows.map((r) => r.id));
			// emitEventNow's id is the final one, the row's.
			const id = await emitEventNow(sql(), { type: 'workers.changed', payload: {} });
			const [row] = await sql()<{ type: string }[]>`select type from events where id = ${id}`;
			expect(row.type).toBe('workers.changed');
			expect(id).toBe(await latestEventId(sql()));
		} finally {
			await a.end();
			await listener.end();
		}
	});

	it('an answer sent while the turn that asked is saving its message: both commit, no deadlock', async () => {
		const operatorId = await newOperator('answer-while-saving');
		const sessionId = await newSession(operatorId);
		const asked = await sql().begin((tx) =>
			insertMessage(tx, { sessionId, role: 'assistant', parts: [{ type: 'text', text: 'Which storage?' }], status: 'complete', origin: 'chat' })
		);
		const q = await sql().begin((tx) => raiseQuestion(tx, { sessionId, messageId: asked.id, prompt: 'Which storage?', options: [], contextEntities: [] }));

		// The turn's side: its transaction holds the session's row (insertMessage touches it)…
		const turnSide = postgres(dbUrl(), { max: 1, onnotice: () => undefined });
		try {
			const holding = gate();
			const goOn = gate();
			const turn = turnSide.begin(async (tx) => {
				await tx`update chat_sessions set updated_at = now() where id = ${sessionId}`;
				holding.open();
				await goOn.opened;
				// …then writes a message and its event, as a turn's next reply does.
				return insertTurnMessage(tx, sessionId, 'answer');
			});
			await holding.opened;
			// The answer: its event (the task's state) is written, then its note waits for the session's row.
			const answer = answerFromPanel(sessionId, q.id, 'local-lvm', { id: operatorId, role: 'admin' });
			await waitForLockWaiter('%update chat_sessions%');
			goOn.open();
			const [turned, answered] = await Promise.allSettled([turn, answer]);
			expect(turned.status, turned.status === 'rejected' ? String(turned.reason) : '').toBe('fulfilled');
			expect(answered).toMatchObject({ status: 'fulfilled', value: { ok: true } });
			const [question] = await sql()<{ status: string; answer: string }[]>`select status, answer from session_questions where id = ${q.id}`;
			expect(question).toEqual({ status: 'answered', answer: 'local-lvm' });
			const notes = await sql()<{ n: number }[]>`
				select count(*)::int as n from messages where session_id = ${sessionId} and role = 'system' and parts::text like '%local-lvm%'`;
			expect(notes[0].n).toBe(1);
		} finally {
			await turnSide.end();
		}
	});
});
