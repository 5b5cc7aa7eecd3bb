import { tool } from 'ai';
import { z } from 'zod';
import { placeGuest } from '../../inventory/placement';
import { nodeName, storage } from '../../proxmox/params';
import { toolError, type ToolContext } from './context';

export const suggestNodeInput = z
	.object({
		memoryMb: z.number().int().min(16).max(4_194_304).optional(),
		storage: storage.optional(),
		exclude: nodeName.optional().describe('the node it is on now')
	})
	.strict();

/** `suggest_node()`: the node Nomos proposes for a guest (offered only with a cluster), the reason computed here, not by the model. */
export function suggestNodeTool(_ctx: ToolContext) {
	return tool({
		description: "Which cluster node to put a guest on when the operator names none: Nomos's pick with its reason, and each node's free memory, CPU and storages.",
		inputSchema: suggestNodeInput,
		execute: async (input) => {
			const r = await placeGuest(input);
			if ('error' in r) return toolError(r.error);
			return {
				node: r.node,
				reason: r.reason,
				nodes: r.nodes.map((n) => ({
					node: n.node,
					status: n.status,
					freeMemMb: n.freeMemMb,
					cpu: `${n.cpuPct}% of ${n.cpus}`,
					storages: n.storages.map((s) => `${s.storage} ${s.availGb}G free${s.shared ? ' shared' : ''}`)
				}))
			};
		}
	});
}
