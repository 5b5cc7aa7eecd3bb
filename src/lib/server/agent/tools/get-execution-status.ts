import { tool } from 'ai';
import { z } from 'zod';
import { sql } from '../../db/index';
import { getExecution } from '../../db/queries/executions';
import { toolError, type ToolContext } from './context';

/** get_execution_status: one execution's state, steps and result. */
export function getExecutionStatusTool(_ctx: ToolContext) {
	return tool({
		// Not to poll with: the instructions say results come back by themselves.
		description: 'Status, steps and output of one execution by id.',
		inputSchema: z.object({ id: z.string().max(64) }).strict(),
		execute: async ({ id }) => {
			if (!z.uuid().safeParse(id).success) return toolError(`'${id}' is not an execution id`, 'execution ids are uuids, as returned by request_execution');
			const e = await getExecution(sql(), id);
			if (!e) return toolError(`no execution ${id}`);
			return {
				id: e.id,
				action: e.action,
				target: e.target,
				status: e.status,
				command: e.commandPreview,
				result: e.result,
				error: e.error,
				steps: e.steps.map((s) => ({ label: s.label, exitCode: s.exitCode, stdoutTail: s.stdoutTail?.slice(-1500), stderrTail: s.stderrTail?.slice(-1500) })),
				decision: e.decision
			};
		}
	});
}
