import { describe, expect, it } from 'vitest';
import { sessionState } from '../../src/lib/components/chat/session-state';
import type { ChatMessage } from '../../src/lib/chat-types';

const msg = (m: Partial<ChatMessage>): ChatMessage => ({
	id: 'x',
	sessionId: 's',
	seq: 1,
	role: 'assistant',
	parts: [],
	status: 'complete',
	origin: 'chat',
	error: null,
	rev: 0,
	...m
});
const base = {
	messages: [] as ChatMessage[],
	executions: [] as Array<{ status: string; action: string; target: string }>,
	openQuestion: false,
	noWorker: false
};

describe('the session state in the chat header', () => {
	it('names what the operator must do first, then the work in progress, then the outcome', () => {
		expect(sessionState(base)).toEqual({ kind: 'idle', text: 'Idle' });
		expect(sessionState({ ...base, openQuestion: true, executions: [{ status: 'awaiting_approval', action: 'pct_start', target: 'lxc:strong/1' }] }).kind).toBe(
			'answer'
		);
		expect(sessionState({ ...base, executions: [{ status: 'awaiting_approval', action: 'pct_start', target: 'lxc:strong/1' }] })).toEqual({
			kind: 'approval',
			text: 'Waiting for your approval (1)'
		});
		// One its host said cannot run (issue #42 item 5) waits for no approval: none can be given.
		const cannot = { status: 'awaiting_approval', action: 'pct_destroy', target: 'lxc:strong/2', beforeApproval: { outcome: 'cannot_run' } };
		expect(sessionState({ ...base, executions: [cannot] })).toEqual({ kind: 'idle', text: 'Idle' });
		expect(
			sessionState({
				...base,
				executions: [cannot, { status: 'awaiting_approval', action: 'pct_start', target: 'lxc:strong/1', beforeApproval: { outcome: 'unknown' } }]
			})
		).toEqual({ kind: 'approval', text: 'Waiting for your approval (1)' });
		expect(sessionState({ ...base, executions: [{ status: 'running', action: 'pct_create', target: 'host:strong' }] }).text).toBe(
			'Running pct_create on host:strong…'
		);
		const streaming = msg({
			status: 'streaming',
			parts: [{ type: 'tool-get_lxc_state', toolCallId: 't', input: { name: 'caddy' }, state: 'input-available' }]
		});
		expect(sessionState({ ...base, messages: [streaming] }).text).toBe('Running get_lxc_state (caddy)…');
		expect(sessionState({ ...base, messages: [msg({ status: 'streaming' })] }).text).toBe('Thinking…');
		expect(sessionState({ ...base, messages: [msg({ status: 'error', error: 'the model server answered HTTP 500' })] }).kind).toBe('failed');
	});

	it('says when nothing can run because no worker is alive', () => {
		const queued = msg({ role: 'user', status: 'queued' });
		expect(sessionState({ ...base, messages: [queued], noWorker: true })).toEqual({ kind: 'no-worker', text: 'Queued, waiting for a worker' });
		expect(sessionState({ ...base, messages: [queued] }).kind).toBe('queued');
		expect(sessionState({ ...base, noWorker: true, executions: [{ status: 'approved', action: 'pct_start', target: 'lxc:strong/1' }] }).text).toBe(
			'Approved, waiting for a worker'
		);
	});

	it('counts a plan waiting for approval, and a plan running between two steps', () => {
		const proposed = { status: 'proposed', title: 'Deploy web' };
		expect(sessionState({ ...base, plans: [proposed] })).toEqual({ kind: 'approval', text: 'Waiting for your approval (1)' });
		expect(sessionState({ ...base, plans: [proposed], executions: [{ status: 'awaiting_approval', action: 'pct_start', target: 'lxc:strong/1' }] }).text).toBe(
			'Waiting for your approval (2)'
		);
		expect(sessionState({ ...base, plans: [{ status: 'approved', title: 'Deploy web' }] })).toEqual({
			kind: 'running',
			text: 'Running the plan “Deploy web”…'
		});
		for (const status of ['succeeded', 'failed', 'cancelled', 'interrupted', 'denied', 'superseded']) {
			expect(sessionState({ ...base, plans: [{ status, title: 'Deploy web' }] }).kind).toBe('idle');
		}
	});
});
