import { tool } from 'ai';
import { z } from 'zod';
import { ACTIONS, ACTION_NAMES, isActionName, needsPerson, type ActionName } from '../../proxmox/actions';
import { HEALTH_ACTIONS, HEALTH_FAMILY, HEALTH_GIST } from '../../proxmox/health-reads';
import { BACKUP_ACTIONS } from '../../proxmox/actions/backups';
import { actionParamsSchema, actionSignature } from '../../proxmox/tool-schema';
import { toolError, type ToolContext } from './context';

/** How a family member that is not a read is approved, in its line. */
const approvalMark = (n: ActionName) =>
	ACTIONS[n].classification === 'read_only' ? '' : needsPerson(n) ? ' [destructive: a person approves]' : ' [waits for approval]';

/**
 * describe_action: one catalogued action in full (what it does, how it is approved, where it
 * runs, its params as JSON Schema), loaded only when the model needs it: request_execution's
 * description carries one signature per action instead of every schema. A family (`health`,
 * issue #45) is named there and listed here: its signatures and what each reads.
 */
export function describeActionTool(_ctx: ToolContext) {
	return tool({
		description: "One catalogued action in full: what it does, its approval, and each field's type, bounds and meaning.",
		inputSchema: z.object({ action: z.string().max(64) }).strict(),
		execute: ({ action }) => {
			if (action === HEALTH_FAMILY) {
				return {
					family: HEALTH_FAMILY,
					does: HEALTH_GIST,
					classification: 'read_only unless marked',
					target: 'a host (node?: another cluster member, read through it)',
					// The backup actions (issue #45 item 2) are described here too: those that change something say how they are approved.
					actions: ([...HEALTH_ACTIONS, ...BACKUP_ACTIONS] as ActionName[]).map((n) => `${actionSignature(n)}${approvalMark(n)}: ${ACTIONS[n].description}`)
				};
			}
			if (!isActionName(action)) return toolError(`unknown action '${action}'`, `actions: ${ACTION_NAMES.join(', ')}; families: ${HEALTH_FAMILY}`);
			const def = ACTIONS[action];
			const { title: _t, description: _d, ...params } = actionParamsSchema(action);
			const target = def.scope === 'host' ? 'a host' : def.scope === 'ct' ? 'a container' : 'a host or a container';
			return { action, does: def.description, classification: def.classification, target, signature: actionSignature(action), params };
		}
	});
}
