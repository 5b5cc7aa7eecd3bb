import { callTitle, callView, type ChatMessage } from '$lib/chat-types';
import { isRunning, isToolPart } from '$lib/messages/parts';

export type SessionStateKind = 'answer' | 'running' | 'thinking' | 'queued' | 'no-worker' | 'approval' | 'failed' | 'idle';

/**
 * What the session is doing right now, in words, derived from what the page already follows
 * live (messages, executions, plans, the open question, worker presence). First match wins: the
 * thing the operator must act on, then work in progress, then the last outcome. A proposed plan
 * waits for approval as an execution does; a running plan between two steps is still running.
 */
export function sessionState(s: {
	messages: ChatMessage[];
	executions: Array<{ status: string; action: string; target: string; beforeApproval?: { outcome: string } | null }>;
	plans?: Array<{ status: string; title: string }>;
	openQuestion: boolean;
	noWorker: boolean;
}): { kind: SessionStateKind; text: string } {
	const plans = s.plans ?? [];
	const streaming = s.messages.find((m) => m.status === 'streaming');
	const queued = s.messages.some((m) => m.status === 'queued');
	const running = s.executions.filter((e) => e.status === 'running' || e.status === 'approved');
	// A request its host said cannot run is not waiting for an approval: none can be given.
	const pending =
		s.executions.filter((e) => e.status === 'awaiting_approval' && e.beforeApproval?.outcome !== 'cannot_run').length +
		plans.filter((p) => p.status === 'proposed').length;
	const runningPlan = plans.find((p) => p.status === 'approved');
	if (s.openQuestion) return { kind: 'answer', text: 'Waiting for your answer' };
	if (streaming) {
		const tool = [...streaming.parts].reverse().find((p) => isToolPart(p) && isRunning(p));
		return { kind: 'thinking', text: tool && isToolPart(tool) ? `Running ${callTitle(callView(tool))}…` : 'Thinking…' };
	}
	if (running.length) {
		if (s.noWorker) return { kind: 'no-worker', text: 'Approved, waiting for a worker' };
		const e = running[0];
		return {
			kind: 'running',
			text: `${e.status === 'approved' ? 'Starting' : 'Running'} ${e.action} on ${e.target}…${running.length > 1 ? ` (+${running.length - 1})` : ''}`
		};
	}
	if (runningPlan)
		return s.noWorker ? { kind: 'no-worker', text: 'Approved, waiting for a worker' } : { kind: 'running', text: `Running the plan “${runningPlan.title}”…` };
	if (queued) return s.noWorker ? { kind: 'no-worker', text: 'Queued, waiting for a worker' } : { kind: 'queued', text: 'Queued…' };
	if (pending) return { kind: 'approval', text: `Waiting for your approval (${pending})` };
	const last = [...s.messages].reverse().find((m) => m.role === 'assistant');
	if (last?.status === 'error') return { kind: 'failed', text: `Stopped with an error${last.error ? `: ${last.error}` : ''}` };
	return { kind: 'idle', text: 'Idle' };
}
