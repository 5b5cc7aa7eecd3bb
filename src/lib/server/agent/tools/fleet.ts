import type { ToolContext } from './context';
import { getEntityTool } from './get-entity';
import { getLxcStateTool } from './get-lxc-state';
import { getStateSnapshotTool } from './get-state-snapshot';
import { listEntitiesTool } from './list-entities';
import { listLxcsTool } from './list-lxcs';

/** The read-only fleet/inventory tools, keyed by the names the model sees. */
export function fleetTools(ctx: ToolContext) {
	return {
		list_entities: listEntitiesTool(ctx),
		get_entity: getEntityTool(ctx),
		list_lxcs: listLxcsTool(ctx),
		get_lxc_state: getLxcStateTool(ctx),
		get_state_snapshot: getStateSnapshotTool(ctx)
	};
}
