import { callTitle, callView, type ChatMessage } from '$lib/chat-types';
import { isRunning, isToolPart } from '$lib/messages/parts';

export type SessionStateKind = 'answer' | 'running' | 'thinking' | 'queued' | 'no-worker' | 'approval' | 'failed' | 'idle';

/**
 * What the session is doing right now, in words, derived from what the page already follows
 * live (messages, executions, the open question, worker presence). First match wins: the thing
 * the operator must act on, then work in progress, then the last outcome.
 */
export function sessionState(s: {
	messages: ChatMessage[];
	executions: Array<{ status: string; action: string; target: string; beforeApproval?: { outcome: string } | null }>;
	openQuestion: boolean;
	noWorker: boolean;
}): { kind: SessionStateKind; text: string } {
	const streaming = s.messages.find((m) => m.status === 'streaming');
	const queued = s.messages.some((m) => m.status === 'queued');
	const running = s.executions.filter((e) => e.status === 'running' || e.status === 'approved');
	// A request its host said cannot run is not waiting for an approval: none can be given.
	const pending = s.executions.filter((e) => e.status === 'awaiting_approval' && e.beforeApproval?.outcome !== 'cannot_run');
	if (s.openQuestion) return { kind: 'answer', text: 'Waiting for your answer' };
	if (streaming) {
		const tool = [...streaming.parts].reverse().find((p) => isToolPart(p) && isRunning(p));
		return { kind: 'thinking', text: tool && isToolPart(tool) ? `Running ${callTitle(callView(tool))}…` : 'Thinking…' };
	}
	if (running.length) {
		if (s.noWorker) return { kind: 'no-worker', text: 'Approved, waiting for a worker' };
		const e = running[0];
		return { kind: 'running', text: `${e.status === 'approved' ? 'Starting' : 'Running'} ${e.action} on ${e.target}…${running.length > 1 ? ` (+${running.length - 1})` : ''}` };
	}
	if (queued) return s.noWorker ? { kind: 'no-worker', text: 'Queued, waiting for a worker' } : { kind: 'queued', text: 'Queued…' };
	if (pending.length) return { kind: 'approval', text: `Waiting for your approval (${pending.length})` };
	const last = [...s.messages].reverse().find((m) => m.role === 'assistant');
	if (last?.status === 'error') return { kind: 'failed', text: `Stopped with an error${last.error ? `: ${last.error}` : ''}` };
	return { kind: 'idle', text: 'Idle' };
}
