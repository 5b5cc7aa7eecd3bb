import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/lib/server/db/queries/events';
import { createTestDatabase } from '../helpers/db';
import { scaled } from '../helpers/time';

describe('event log NOTIFY', () => {
	it('notifies committed events with a small payload and nothing for a rollback', async () => {
		const url = await createTestDatabase();
		const listener = postgres(url, { max: 1, onnotice: () => undefined });
		const writer = postgres(url, { max: 1, onnotice: () => undefined });
		const got: string[] = [];
		await listener.listen('nomos_events', (p) => got.push(p));
		try {
			await writer.begin(async (tx) => {
				await emitEvent(tx, { sessionId: null, type: 'message.updated', payload: { messageId: 'x'.repeat(20_000) } });
			});
			await writer
				.begin(async (tx) => {
					await emitEvent(tx, { type: 'workers.changed', payload: {} });
					throw new Error('roll back');
				})
				.catch(() => undefined);
			await writer.begin(async (tx) => {
				await emitEvent(tx, {
					sessionId: '00000000-0000-0000-0000-000000000001',
					type: 'question.raised',
					payload: { questionId: '00000000-0000-4000-8000-000000000001', prompt: 'which host?' }
				});
			});
			// Notifications arrive in commit order: once a last committed event is in, a notification
			// for the rolled-back one (the same type) would be in too.
			await writer.begin(async (tx) => {
				await emitEvent(tx, { type: 'workers.changed', payload: {} });
			});
			const until = Date.now() + scaled(5000);
			while (!got.some((p) => p.includes('"workers.changed"')) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
			const parsed = got.map((p) => JSON.parse(p));
			expect(parsed.map((p) => p.t)).toEqual(['message.updated', 'question.raised', 'workers.changed']);
			expect(parsed[1].s).toBe('00000000-0000-0000-0000-000000000001');
			for (const p of got) expect(Buffer.byteLength(p)).toBeLessThan(100);
			const [row] = await writer`select payload->>'messageId' as big, jsonb_typeof(payload) as kind from events where id = ${parsed[0].id}`;
			expect(row.kind).toBe('object');
			expect(row.big).toHaveLength(20_000);
		} finally {
			await listener.end();
			await writer.end();
		}
	});
});
