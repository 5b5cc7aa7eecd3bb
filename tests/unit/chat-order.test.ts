// The chat's order (issue #42 item 6): the operator's queued messages wait at the end, below a
// continuation that streams meanwhile; the turn that takes one gives it a new seq, after that
// continuation, and the page moves it there (it was already there: nothing jumps).
import { describe, expect, it } from 'vitest';
import { ChatState } from '../../src/lib/state/chat.svelte';
import type { ChatMessage } from '../../src/lib/chat-types';

const msg = (id: string, seq: number, role: ChatMessage['role'], status: ChatMessage['status'], rev = 0): ChatMessage =>
	({ id, sessionId: 's', seq, role, status, rev, parts: [], origin: role === 'user' ? 'chat' : 'continuation', error: null, runner: null }) as ChatMessage;

describe('ChatState order', () => {
	it('shows a queued message last, and keeps it there when a turn takes it with a new seq', () => {
		const chat = new ChatState('s', [msg('reply', 3, 'assistant', 'streaming'), msg('asked', 1, 'user', 'complete'), msg('later', 2, 'user', 'queued')], 0);
		expect(chat.messages.map((m) => m.id)).toEqual(['asked', 'reply', 'later']);
		chat.upsert(msg('note', 4, 'system', 'complete'));
		expect(chat.messages.map((m) => m.id)).toEqual(['asked', 'reply', 'note', 'later']);
		// The chat turn claims it: seq 5, after the note; its reply comes next.
		chat.upsert(msg('later', 5, 'user', 'complete', 1));
		chat.upsert(msg('answer', 6, 'assistant', 'streaming'));
		expect(chat.messages.map((m) => m.id)).toEqual(['asked', 'reply', 'note', 'later', 'answer']);
		// An older snapshot (the queued one, seq 2) arriving late changes nothing.
		chat.upsert(msg('later', 2, 'user', 'queued', 0));
		expect(chat.messages.map((m) => [m.id, m.seq])).toEqual([
			['asked', 1],
			['reply', 3],
			['note', 4],
			['later', 5],
			['answer', 6]
		]);
	});
});
