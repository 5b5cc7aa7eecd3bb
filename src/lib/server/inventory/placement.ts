// Placement: which cluster node Nomos proposes for a guest, read live from a cluster member.
import { sql } from '../db/index';
import { listHosts } from '../db/queries/hosts';
import { nodeCapacities, parseClusterResources, suggestNode, type Placement } from '../proxmox/migrate';
import { execArgv } from '../ssh/client';
import { withHost } from '../ssh/pool';

/**
 * Reads `/cluster/resources` from the first pinned host that answers with a cluster (two or more
 * nodes) and proposes a node for a guest needing `memoryMb` and `storage` (see suggestNode).
 * Never throws: a fleet without a reachable cluster member gets `{ error }`.
 */
export async function placeGuest(need: { memoryMb?: number; storage?: string; exclude?: string }): Promise<(Placement & { readFrom: string }) | { error: string }> {
	const hosts = (await listHosts(sql())).filter((h) => h.hostKeyFingerprint);
	const tried: string[] = [];
	for (const host of hosts) {
		try {
			const r = await withHost(host, (c) => execArgv(c, ['pvesh', 'get', '/cluster/resources', '--output-format', 'json'], { timeoutMs: 20_000 }), 8_000);
			if (r.exitCode !== 0) throw new Error((r.stderr || r.stdout).trim().split('\n')[0] || `exit ${r.exitCode}`);
			const nodes = nodeCapacities(parseClusterResources(r.stdout));
			if (nodes.length < 2) {
				tried.push(`${host.name}: not a cluster member`);
				continue;
			}
			return { ...suggestNode(nodes, need), readFrom: host.name };
		} catch (e) {
			tried.push(`${host.name}: ${(e as Error).message.slice(0, 200)}`);
		}
	}
	return { error: `no cluster member answered${tried.length ? ` (${tried.join('; ')})` : ': no pinned hosts'}` };
}
