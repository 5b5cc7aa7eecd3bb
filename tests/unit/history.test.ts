import { describe, expect, it } from 'vitest';
import { toModelMessages } from '../../src/lib/server/agent/history';
import type { MessageRow } from '../../src/lib/server/db/queries/messages';
import type { MessagePart } from '../../src/lib/server/db/schema';

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
const call = (id: string, name: string, input: unknown, extra: Partial<Extract<MessagePart, { type: 'tool-call' }>> = {}): MessagePart => ({
	type: 'tool-call',
	toolCallId: id,
	toolName: name,
	input,
	state: 'done',
	output: { ok: id },
	...extra
});

describe('history replay', () => {
	it('replays each step as assistant text + calls followed by their results, as it ran live', () => {
		const msgs = toModelMessages([
			row('user', [{ type: 'text', text: 'check caddy' }]),
			row('assistant', [
				{ type: 'text', text: 'Looking.' },
				call('a', 'list_lxcs', {}),
				call('b', 'get_lxc_state', { name: 'caddy' }),
				{ type: 'text', text: 'caddy runs.' }
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

	it('keeps every call paired with a result: errors and interrupted calls become error results', () => {
		const msgs = toModelMessages([
			row('assistant', [
				call('x', 'http_get', { url: 'u' }, { state: 'error', output: undefined, error: 'refused: loopback' }),
				call('y', 'get_lxc_state', { vmid: '101' }, { state: 'running', output: undefined })
			], 'cancelled')
		]);
		expect(msgs[1]).toEqual({
			role: 'tool',
			content: [
				{ type: 'tool-result', toolCallId: 'x', toolName: 'http_get', output: { type: 'error-text', value: 'refused: loopback' } },
				{ type: 'tool-result', toolCallId: 'y', toolName: 'get_lxc_state', output: { type: 'error-text', value: 'interrupted before it finished' } }
			]
		});
	});

	it('a tool error result with a hint is replayed as data, so the model sees the hint', () => {
		const msgs = toModelMessages([row('assistant', [call('z', 'request_execution', {}, { state: 'error', output: { error: 'unknown action', hint: 'valid: pct_create' }, error: 'unknown action' })])]);
		expect((msgs[1] as { content: Array<{ output: unknown }> }).content[0].output).toEqual({ type: 'json', value: { error: 'unknown action', hint: 'valid: pct_create' } });
	});

	it('system notes reach the model as marked notes, not as operator words; empty and note-only messages add nothing', () => {
		const msgs = toModelMessages([
			row('system', [{ type: 'note', kind: 'execution', text: 'execution 1 (pct_create on host:strong) succeeded' }]),
			row('assistant', [], 'error'),
			row('assistant', [{ type: 'note', kind: 'retry', text: 'retrying' }]),
			row('user', [{ type: 'text', text: '' }])
		]);
		expect(msgs).toEqual([{ role: 'user', content: '[system note — not from the operator] execution 1 (pct_create on host:strong) succeeded' }]);
	});
});
