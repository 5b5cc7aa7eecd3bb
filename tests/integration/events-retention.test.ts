// The event log is pruned by age, in batches; a client whose cursor is older than what is kept
// gets a distinct `stream.reset` event (and the stream ends) instead of a silent gap.
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { emitEventNow, pruneEvents, prunedThrough } from '../../src/lib/server/db/queries/events';
import { openEventStream } from '../../src/lib/server/realtime/sse';
import { useTestDatabase } from '../helpers/db';
import { useHub, waitUntil } from '../helpers/executions';

useTestDatabase();
const theHub = useHub();

function stream(after: number) {
	const s = { text: '', ended: false };
	openEventStream({
		sql: sql(),
		hub: theHub(),
		after,
		scope: { viewer: { id: '00000000-0000-4000-8000-00000000000a', role: 'admin' as const } },
		sink: { write: (b) => void (s.text += new TextDecoder().decode(b)), backlog: () => 0, end: () => void (s.ended = true) }
	});
	return s;
}

describe('events retention', () => {
	it('prunes what is older than the retention in batches and tells a client behind it to reload', async () => {
		const ids: number[] = [];
		for (let i = 0; i < 25; i++) ids.push(await emitEventNow(sql(), { type: 'inventory.synced', payload: { host: 'h', containers: i } }));
		await sql()`update events set created_at = now() - interval '20 days' where id <= ${ids[19]}`;
		expect(await prunedThrough(sql())).toBe(0);

		expect(await pruneEvents(sql(), 14, 7)).toBe(20);
		expect(await prunedThrough(sql())).toBe(ids[19]);
		const [{ n }] = await sql()`select count(*)::int as n from events where id <= ${ids[24]}`;
		expect(n).toBe(5);
		expect(await pruneEvents(sql(), 14, 7)).toBe(0);
		expect(await prunedThrough(sql())).toBe(ids[19]);

		// A client last at an event that is gone: reset, then the stream ends.
		await emitEventNow(sql(), { type: 'inventory.synced', payload: { host: 'late' } });
		await waitUntil(async () => theHub().lastId > ids[24], 'the hub to see the newest event');
		const behind = stream(ids[3]);
		await waitUntil(async () => behind.ended, 'the stale stream to end');
		expect(behind.text).toContain('event: stream.reset');
		expect(behind.text).not.toContain('event: inventory.synced');

		// A client within the retained range replays normally.
		const recent = stream(ids[21]);
		await waitUntil(async () => recent.text.includes(': live'), 'the recent stream to go live');
		expect(recent.text).not.toContain('stream.reset');
		expect(recent.text.match(/event: inventory.synced/g)).toHaveLength(4);
		expect(recent.ended).toBe(false);
	});
});
