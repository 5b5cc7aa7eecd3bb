import { sql } from '../../db/index';
import { executionByCallKey } from '../../db/queries/executions';
import { planByCallKey } from '../../db/queries/plans';
import { questionByCallKey } from '../../db/queries/questions';
import { callKey } from './context';

/**
 * What a tool call of a reply had already parked for the operator when its process stopped (the
 * request, plan or question it stored, found by its call key), as the result the model is shown
 * when the reply is resumed; null when it stored nothing (then the call counts as interrupted).
 * So a resumed turn never asks twice for what it already asked.
 */
export function parkedOutputs(messageId: string): (toolName: string, toolCallId: string) => Promise<unknown> {
	return async (toolName, toolCallId) => {
		const key = callKey({ messageId }, toolCallId);
		const resumed = 'stored before Nomos restarted; do not ask for it again';
		if (toolName === 'request_execution') {
			const e = await executionByCallKey(sql(), key);
			if (e?.cannotRun) {
				const { cannotRun, ...rest } = e;
				return {
					...rest,
					status: 'cannot_run',
					error: `cannot run now: ${cannotRun}. Execution ${e.id} was recorded but cannot be approved, and nothing will run.`
				};
			}
			return e
				? {
						executionId: e.id,
						action: e.action,
						target: e.target,
						classification: e.classification,
						command: e.command,
						status: e.status,
						message: `execution ${e.id} ${resumed}; it is ${e.status.replace('_', ' ')}, and you will be re-invoked when it finishes or is denied`
					}
				: null;
		}
		if (toolName === 'propose_plan') {
			const p = await planByCallKey(sql(), key);
			return p
				? {
						planId: p.id,
						status: p.status === 'proposed' ? 'awaiting_approval' : p.status,
						message: `plan ${p.id} ${resumed}. End your turn now; you will be re-invoked when it is decided.`
					}
				: null;
		}
		if (toolName === 'ask_operator') {
			const q = await questionByCallKey(sql(), key);
			return q ? { questionId: q.id, status: q.status === 'open' ? 'waiting for the operator' : q.status, prompt: q.prompt } : null;
		}
		return null;
	};
}
