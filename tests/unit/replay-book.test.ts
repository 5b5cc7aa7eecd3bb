import { describe, expect, it } from 'vitest';
import { ReplayBook, replayKey, replayed } from '../../src/lib/server/agent/tools/replay';
import type { Recording } from '../../src/lib/schemas/replay';
import { tool } from 'ai';
import { z } from 'zod';

const call = (t: string, input: unknown, output: unknown, outcome: Record<string, unknown> | null = null) => ({
	tool: t,
	key: replayKey(t, input),
	output,
	outcome
});
const recording: Recording = {
	operatorMessages: ['start caddy'],
	calls: [
		call('list_lxcs', { host: 'strong' }, { containers: 3 }),
		call('ask_operator', { prompt: 'Which one?' }, { questionId: 'q1' }, { status: 'answered', answer: 'caddy' }),
		call('propose_plan', { title: 'go', steps: [{ action: 'pct_start', target: 'caddy', params: {}, why: 'a' }] }, { planId: 'p1' }, { status: 'succeeded' }),
		call(
			'request_execution',
			{ target: 'caddy', action: 'pct_start', params: { a: 1, b: 2 }, reason: 'x' },
			{ status: 'awaiting_approval' },
			{ status: 'failed', output: '', error: 'exit 1' }
		)
	]
};
const nope = async () => {
	throw new Error('ran live');
};

describe('the replay book', () => {
	it('answers reads from the recording (key order aside), and an unrecorded one only when live reads are allowed', async () => {
		const book = new ReplayBook(recording);
		expect(await book.answer('list_lxcs', { host: 'strong' }, nope)).toEqual({ containers: 3 });
		expect(await book.answer('list_lxcs', { host: 'other' }, nope)).toMatchObject({ error: 'not recorded in the original session' });
		const live = new ReplayBook(recording, true);
		expect(await live.answer('list_lxcs', { host: 'other' }, async () => ({ containers: 1 }))).toEqual({ containers: 1 });
	});

	it('answers questions, plans and requests with the original outcomes; a parking tool never runs, live reads or not', async () => {
		const book = new ReplayBook(recording, true);
		expect(await book.answer('ask_operator', { prompt: 'Which container, then?' }, nope)).toMatchObject({ answer: 'caddy' });
		expect(await book.answer('propose_plan', { title: 'other title', steps: [{ action: 'pct_start', target: 'caddy', why: 'b' }] }, nope)).toMatchObject({
			replay: expect.stringMatching(/^would have proposed/),
			status: 'succeeded'
		});
		expect(await book.answer('request_execution', { target: 'caddy', action: 'pct_start', params: { b: 2, a: 1 }, reason: 'y' }, nope)).toMatchObject({
			status: 'failed',
			error: 'exit 1'
		});
		expect(await book.answer('request_execution', { target: 'caddy', action: 'pct_destroy', params: {}, reason: 'y' }, nope)).toMatchObject({
			status: 'not run in replay'
		});
		const ran: string[] = [];
		const t = replayed(
			'request_execution',
			tool({ inputSchema: z.object({}).loose(), execute: async () => ran.push('ran') }),
			new ReplayBook({ operatorMessages: [], calls: [] }, true)
		);
		expect(await t.execute!({ target: 'x', action: 'pct_stop', params: {} }, { toolCallId: '1', messages: [] })).toMatchObject({ status: 'not run in replay' });
		expect(ran).toEqual([]);
	});
});
