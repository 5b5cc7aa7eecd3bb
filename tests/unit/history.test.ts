import { describe, expect, it } from 'vitest';
import { toModelMessages } from '../../src/lib/server/agent/history';
import type { MessageRow } from '../../src/lib/server/db/queries/messages';
import type { MessagePart } from '../../src/lib/types/messages';

let seq = 0;
const row = (role: MessageRow['role'], parts: MessagePart[], status: MessageRow['status'] = 'complete'): MessageRow => ({
	id: `m${++seq}`,
	sessionId: 's',
	seq,
	role,
	parts,
	status,
	origin: 'chat',
	error: null,
	rev: 1,
	createdAt: '',
	updatedAt: ''
});
const call = (id: string, name: string, input: unknown, extra: Record<string, unknown> = {}): MessagePart =>
	({ type: `tool-${name}`, toolCallId: id, input, state: 'output-available', output: { ok: id }, ...extra }) as MessagePart;
const step: MessagePart = { type: 'step-start' };

describe('history replay', () => {
	it('replays each step as assistant text + calls followed by their results, as it ran live', async () => {
		const msgs = await toModelMessages([
			row('user', [{ type: 'text', text: 'check caddy' }]),
			row('assistant', [
				step,
				{ type: 'text', text: 'Looking.', state: 'done' },
				call('a', 'list_lxcs', {}),
				call('b', 'get_lxc_state', { name: 'caddy' }),
				step,
				{ type: 'text', text: 'caddy runs.', state: 'done' }
			])
		]);
		expect(msgs).toEqual([
			{ role: 'user', content: 'check caddy' },
			{
				role: 'assistant',
				content: [
					{ type: 'text', text: 'Looking.' },
					{ type: 'tool-call', toolCallId: 'a', toolName: 'list_lxcs', input: {} },
					{ type: 'tool-call', toolCallId: 'b', toolName: 'get_lxc_state', input: { name: 'caddy' } }
				]
			},
			{
				role: 'tool',
				content: [
					{ type: 'tool-result', toolCallId: 'a', toolName: 'list_lxcs', output: { type: 'json', value: { ok: 'a' } } },
					{ type: 'tool-result', toolCallId: 'b', toolName: 'get_lxc_state', output: { type: 'json', value: { ok: 'b' } } }
				]
			},
			{ role: 'assistant', content: [{ type: 'text', text: 'caddy runs.' }] }
		]);
	});

	it('keeps every call paired with a result: errors and interrupted calls become error results', async () => {
		const msgs = await toModelMessages([
			row(
				'assistant',
				[
					step,
					call('x', 'http_get', { url: 'u' }, { state: 'output-error', output: undefined, errorText: 'refused: loopback' }),
					call('y', 'get_lxc_state', { vmid: '101' }, { state: 'input-available', output: undefined }),
					call('w', 'get_lxc_state', undefined, { state: 'input-streaming', output: undefined }),
					call('v', 'request_execution', undefined, { state: 'output-error', output: undefined, rawInput: { actoin: 'x' }, errorText: 'invalid input' })
				],
				'cancelled'
			)
		]);
		expect(msgs[0]).toEqual({
			role: 'assistant',
			content: [
				{ type: 'tool-call', toolCallId: 'x', toolName: 'http_get', input: { url: 'u' } },
				{ type: 'tool-call', toolCallId: 'y', toolName: 'get_lxc_state', input: { vmid: '101' } },
				{ type: 'tool-call', toolCallId: 'w', toolName: 'get_lxc_state', input: {} },
				{ type: 'tool-call', toolCallId: 'v', toolName: 'request_execution', input: { actoin: 'x' } }
			]
		});
		expect(msgs[1]).toEqual({
			role: 'tool',
			content: [
				{ type: 'tool-result', toolCallId: 'x', toolName: 'http_get', output: { type: 'error-text', value: 'refused: loopback' } },
				{ type: 'tool-result', toolCallId: 'y', toolName: 'get_lxc_state', output: { type: 'error-text', value: 'interrupted before it finished' } },
				{ type: 'tool-result', toolCallId: 'w', toolName: 'get_lxc_state', output: { type: 'error-text', value: 'interrupted before it finished' } },
				{ type: 'tool-result', toolCallId: 'v', toolName: 'request_execution', output: { type: 'error-text', value: 'invalid input' } }
			]
		});
	});

	it('a tool error result with a hint is replayed as data, so the model sees the hint', async () => {
		const msgs = await toModelMessages([
			row('assistant', [step, call('z', 'request_execution', {}, { output: { error: 'unknown action', hint: 'valid: pct_create' } })])
		]);
		expect((msgs[1] as { content: Array<{ output: unknown }> }).content[0].output).toEqual({
			type: 'json',
			value: { error: 'unknown action', hint: 'valid: pct_create' }
		});
	});

	it('system notes reach the model as marked notes, not as operator words; empty and note-only messages add nothing', async () => {
		const msgs = await toModelMessages([
			row('system', [{ type: 'data-note', data: { kind: 'execution', text: 'execution 1 (pct_create on host:strong) succeeded' } }]),
			row('assistant', [], 'error'),
			row('assistant', [step, { type: 'data-note', data: { kind: 'retry', text: 'retrying' } }, { type: 'text', text: '', state: 'done' }]),
			row('user', [{ type: 'text', text: '' }])
		]);
		expect(msgs).toEqual([{ role: 'user', content: '[system note — not from the operator] execution 1 (pct_create on host:strong) succeeded' }]);
	});

	it('long results of earlier replies become handles that say how to read them again; the latest reply keeps its own', async () => {
		const id = '5f0c2a8e-1111-4222-8333-944445555666';
		const long = { executionId: id, action: 'pct_exec', status: 'succeeded', output: 'Setting up nginx …\n'.repeat(60) };
		const snapshot = { hosts: [{ cts: Array.from({ length: 40 }, (_, i) => `${100 + i} ct${i} running`) }] };
		const plan = { planId: 'p1', status: 'awaiting_approval', steps: 'x'.repeat(900) };
		const rows = [
			row('user', [{ type: 'text', text: 'deploy it' }]),
			row('assistant', [
				step,
				call('a', 'request_execution', { action: 'pct_exec' }, { output: long }),
				call('b', 'get_state_snapshot', {}, { output: snapshot }),
				call('c', 'propose_plan', { title: 't' }, { output: plan }),
				call('s', 'list_lxcs', {}, { output: { n: 1 } })
			]),
			row('assistant', [step, call('d', 'request_execution', { action: 'pct_exec' }, { output: long })])
		];
		const msgs = await toModelMessages(rows);
		const results = msgs
			.flatMap((m) => (m.role === 'tool' ? m.content : []))
			.map((p) => (p.type === 'tool-result' && p.output.type === 'json' ? p.output.value : null)) as Array<Record<string, unknown>>;
		expect(results[0]).toEqual({
			executionId: id,
			action: 'pct_exec',
			status: 'succeeded',
			shortened: expect.stringContaining(`read it again with get_execution_status({"id":"${id}"})`) as unknown
		});
		expect(results[1]).toEqual({
			shortened: expect.stringMatching(/^\d+ characters, left out of the history; read it again with get_state_snapshot\(\{\}\)/) as unknown
		});
		// A tool that acts is never suggested again.
		expect(results[2]).toEqual({ status: 'awaiting_approval', shortened: expect.not.stringContaining('again') as unknown });
		expect(results[3]).toEqual({ n: 1 });
		// The latest reply's result is whole, and the stored parts are untouched.
		expect(results[4]).toEqual(long);
		expect((rows[1].parts[1] as { output: unknown }).output).toBe(long);
	});
});
