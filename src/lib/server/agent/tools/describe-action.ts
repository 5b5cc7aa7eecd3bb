import { tool } from 'ai';
import { z } from 'zod';
import { ACTIONS, ACTION_NAMES, isActionName, needsPerson, type ActionName } from '../../proxmox/actions';
import { FAMILIES, familyNamed } from '../../proxmox/families';
import { actionParamsSchema, actionSignature } from '../../proxmox/tool-schema';
import { toolError, type ToolContext } from './context';

/** How a family member that is not a read is approved, in its line. */
const approvalMark = (n: ActionName) =>
	ACTIONS[n].classification === 'read_only'
		? ''
		: needsPerson(n)
			? ` [${'disruptive' in ACTIONS[n] ? 'disruptive' : 'destructive'}: a person approves]`
			: ' [waits for approval]';

/**
 * describe_action: one catalogued action in full (what it does, how it is approved, where it
 * runs, its params as JSON Schema), loaded only when the model needs it: request_execution's
 * description carries one signature per action instead of every schema. A family (`health`,
 * issue #45; proxmox/families.ts) is named there and listed here: its signatures and what each does.
 */
export function describeActionTool(_ctx: ToolContext) {
	return tool({
		description: "One catalogued action in full: what it does, its approval, each field's type and bounds.",
		inputSchema: z.object({ action: z.string().max(64) }).strict(),
		execute: ({ action }) => {
			const family = familyNamed(action);
			if (family) {
				const members = family.actions as ActionName[];
				// The family's classification is its first member's; a member that changes something says how it is approved.
				const usual = ACTIONS[members[0]].classification;
				return {
					family: family.name,
					does: family.gist,
					classification: members.some((n) => approvalMark(n)) ? `${usual} unless marked` : usual,
					target: family.target,
					// Members that change something say how they are approved (the backup actions, a PVE service's restart).
					actions: members.map((n) => `${actionSignature(n)}${approvalMark(n)}: ${ACTIONS[n].description}`)
				};
			}
			if (!isActionName(action))
				return toolError(`unknown action '${action}'`, `actions: ${ACTION_NAMES.join(', ')}; families: ${FAMILIES.map((f) => f.name).join(', ')}`);
			const def = ACTIONS[action];
			const { title: _t, description: _d, ...params } = actionParamsSchema(action);
			const target = def.scope === 'host' ? 'a host' : def.scope === 'ct' ? 'a container' : 'a host or a container';
			return { action, does: def.description, classification: def.classification, target, signature: actionSignature(action), params };
		}
	});
}
