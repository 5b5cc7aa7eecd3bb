// Placement: which cluster node Nomos proposes for a guest, read live from a cluster member.
import { sql } from '../db/index';
import { listHosts } from '../db/queries/hosts';
import { nodeCapacities, parseClusterResources, suggestNode, type Placement } from '../proxmox/migrate';
import { execArgv } from '../ssh/client';
import { withHost } from '../ssh/pool';
import { reachabilityOf } from '../hosts/reachability';

/**
 * Reads `/cluster/resources` from the first pinned host that answers with a cluster (two or more
 * nodes) and proposes a node for a guest needing `memoryMb` and `storage` (see suggestNode).
 * Never throws: a fleet without a reachable cluster member gets `{ error }`.
 */
export async function placeGuest(need: {
	memoryMb?: number;
	storage?: string;
	exclude?: string;
}): Promise<(Placement & { readFrom: string }) | { error: string }> {
	const hosts = (await listHosts(sql())).filter((h) => h.hostKeyFingerprint);
	const tried: string[] = [];
	// Hosts that answered first: one that does not answer costs a connect timeout.
	for (const host of [...hosts].sort((a, b) => Number(!!a.unansweredSince) - Number(!!b.unansweredSince))) {
		try {
			const r = await withHost(host, (c) => execArgv(c, ['pvesh', 'get', '/cluster/resources', '--output-format', 'json'], { timeoutMs: 20_000 }), 8_000);
			if (r.exitCode !== 0) throw new Error((r.stderr || r.stdout).trim().split('\n')[0] || `exit ${r.exitCode}`);
			const listed = nodeCapacities(parseClusterResources(r.stdout));
			if (listed.length < 2) {
				tried.push(`${host.name}: not a cluster member`);
				continue;
			}
			// A member the cluster calls online but that does not answer Nomos cannot take a guest from
			// Nomos either: offline for this choice, saying why.
			const byName = new Map(hosts.map((h) => [h.name, h]));
			const nodes = listed.map((n) => {
				const h = byName.get(n.node);
				if (n.status !== 'online' || !h?.unansweredSince) return n;
				return { ...n, status: `not answering Nomos (${reachabilityOf(h).why})` };
			});
			return { ...suggestNode(nodes, need), readFrom: host.name };
		} catch (e) {
			tried.push(`${host.name}: ${(e as Error).message.slice(0, 200)}`);
		}
	}
	return { error: `no cluster member answered${tried.length ? ` (${tried.join('; ')})` : ': no pinned hosts'}` };
}
