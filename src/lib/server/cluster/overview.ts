// The clusters as Settings → Hosts shows them: each node's standing (online, down since when, out
// of quorum), load, guests and host entry, from the recorded `cluster` entity and the host entries.
import { sql } from '../db/index';
import { listClusters, type ClusterFacts, type Entity } from '../db/queries/entities';
import { listHosts, type Host } from '../db/queries/hosts';
import type { ClusterNodeOverview, ClusterOverview } from '../../types/cluster';

const figure = (n: unknown): number | null => (typeof n === 'number' && Number.isFinite(n) ? n : null);

/**
 * One cluster's view from its entity and the configured hosts (read now, so a host added since the
 * last sync counts at once). The cluster is quorate for Nomos when some node with a host entry is
 * online in the last quorate view, has not since reported `Quorate: No`, and its last sync did not
 * fail: a change can then reach the cluster through it. `keyPath` is shown to admins only.
 */
export function clusterOverview(
	entity: Pick<Entity, 'name' | 'attributes' | 'seenAt'>,
	hosts: Pick<Host, 'id' | 'name' | 'lastError' | 'lastAnswerAt' | 'unansweredSince' | 'port' | 'username' | 'keyPath' | 'mutationKeyPath'>[],
	admin: boolean
): ClusterOverview {
	const facts = entity.attributes as Partial<ClusterFacts>;
	const byName = new Map(hosts.map((h) => [h.name, h]));
	const outOfQuorum = new Map((facts.outOfQuorum ?? []).map((m) => [m.node, m.since]));
	const nodes: ClusterNodeOverview[] = (facts.nodes ?? []).map((n) => {
		const host = byName.get(n.node);
		const guests = (facts.guests ?? []).filter((g) => g.node === n.node);
		const template = (g: (typeof guests)[number]) => g.template === true;
		const online = n.status === 'online';
		return {
			node: n.node,
			status: n.status,
			offlineSince: online ? null : (n.offlineSince ?? null),
			noQuorumSince: outOfQuorum.get(n.node) ?? null,
			host: host ? { id: host.id, lastError: host.lastError, lastAnswerAt: host.lastAnswerAt, unansweredSince: host.unansweredSince } : null,
			freeMemMb: online ? figure(n.freeMemMb) : null,
			totalMemMb: online ? figure(n.totalMemMb) : null,
			cpuPct: online ? figure(n.cpuPct) : null,
			cpus: online ? figure(n.cpus) : null,
			uptimeSec: online ? figure(n.uptimeSec) : null,
			cts: guests.filter((g) => g.type === 'lxc' && !template(g)).length,
			vms: guests.filter((g) => g.type === 'qemu' && !template(g)).length,
			templates: guests.filter(template).length
		};
	});
	const reader = byName.get(facts.readFrom ?? '') ?? nodes.map((n) => byName.get(n.node)).find((h) => !!h);
	return {
		name: entity.name,
		quorate: facts.quorate === true && nodes.some((n) => n.host && n.status === 'online' && !n.noQuorumSince && !n.host.lastError && !n.host.unansweredSince),
		readFrom: facts.readFrom ?? '',
		seenAt: entity.seenAt,
		nodes,
		addDefaults: reader
			? {
					port: reader.port,
					username: reader.username,
					keyPath: admin ? reader.keyPath : '',
					// a second key is shown as there, never its path, to an operator (as the host list does)
					mutationKeyPath: reader.mutationKeyPath === null ? null : admin ? reader.mutationKeyPath : ''
				}
			: null
	};
}

/** Every recorded cluster as Settings → Hosts shows it (none for a fleet of standalone hosts). */
export async function listClusterOverviews(role: string): Promise<ClusterOverview[]> {
	const clusters = await listClusters(sql());
	if (!clusters.length) return [];
	const hosts = await listHosts(sql());
	return clusters.map((c) => clusterOverview(c, hosts, role === 'admin'));
}
