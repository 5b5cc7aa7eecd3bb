import type { Sql } from '../db/index';
import { listMessages } from '../conversation/messages';
import { parkedOutcomes } from '../db/queries/replays';
import { callKey } from '../agent/tools/context';
import { replayKey } from '../agent/tools/replay';
import { getToolName, isToolPart, textOf } from '../../messages/parts';
import type { RecordedCall, Recording } from '../../schemas/replay';

/**
 * What a replay of a session answers from: its operator messages (chat only: answers, approvals
 * and continuations came from the calls below) and every finished tool call with its result;
 * for a request, a plan or a question also what came of it later (found by its call key).
 */
export async function recordSession(sql: Sql, sessionId: string): Promise<Recording> {
	const [messages, parked] = await Promise.all([listMessages(sql, sessionId), parkedOutcomes(sql, sessionId)]);
	const executions = new Map(parked.executions.map((e) => [e.callKey, e]));
	const plans = new Map(parked.plans.map((p) => [p.callKey, p]));
	const questions = new Map(parked.questions.map((q) => [q.callKey, q]));
	const operatorMessages: string[] = [];
	const calls: RecordedCall[] = [];
	for (const m of messages) {
		if (m.role === 'user' && m.origin === 'chat') {
			const text = textOf(m.parts).trim();
			if (text) operatorMessages.push(text);
			continue;
		}
		if (m.role !== 'assistant') continue;
		for (const p of m.parts) {
			if (!isToolPart(p) || p.state !== 'output-available') continue;
			const tool = getToolName(p);
			const key = callKey({ messageId: m.id }, p.toolCallId);
			let outcome: Record<string, unknown> | null = null;
			const e = tool === 'request_execution' ? executions.get(key) : undefined;
			if (e) {
				const output = e.steps
					.map((s) => s.stdoutTail || s.stderrTail)
					.join('\n')
					.slice(-6000);
				outcome = { status: e.status, output, ...(e.error ? { error: e.error } : {}) };
			}
			const plan = tool === 'propose_plan' ? plans.get(key) : undefined;
			if (plan) outcome = { status: plan.status, ...(plan.error ? { error: plan.error } : {}) };
			const q = tool === 'ask_operator' ? questions.get(key) : undefined;
			if (q) outcome = { status: q.status, answer: q.answer };
			calls.push({ tool, key: replayKey(tool, p.input), output: p.output, outcome });
		}
	}
	return { operatorMessages, calls };
}
