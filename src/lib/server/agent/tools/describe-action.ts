import { tool } from 'ai';
import { z } from 'zod';
import { ACTIONS, ACTION_NAMES, isActionName, type ActionName } from '../../proxmox/actions';
import { FAMILIES, familyNamed } from '../../proxmox/families';
import { actionParamsSchema, actionSignature } from '../../proxmox/tool-schema';
import { toolError, type ToolContext } from './context';

/**
 * describe_action: one catalogued action in full (what it does, how it is approved, where it
 * runs, its params as JSON Schema), loaded only when the model needs it: request_execution's
 * description carries one signature per action instead of every schema. A family (`health`,
 * issue #45; proxmox/families.ts) is named there and listed here: its signatures and what each does.
 */
export function describeActionTool(_ctx: ToolContext) {
	return tool({
		description: "One catalogued action in full: what it does, its approval, and each field's type, bounds and meaning.",
		inputSchema: z.object({ action: z.string().max(64) }).strict(),
		execute: ({ action }) => {
			const family = familyNamed(action);
			if (family) {
				const members = family.actions as ActionName[];
				const kinds = new Set(members.map((n) => ACTIONS[n].classification));
				// One classification for the family when its members share it; else each line says its own.
				const mark = (n: ActionName) => (kinds.size > 1 ? ` [${ACTIONS[n].classification}]` : '');
				return {
					family: family.name,
					does: family.gist,
					...(kinds.size === 1 ? { classification: [...kinds][0] } : {}),
					target: family.target,
					actions: members.map((n) => `${actionSignature(n)}${mark(n)}: ${ACTIONS[n].description}`)
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
