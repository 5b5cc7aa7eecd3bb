import { sql } from '../../db/index';
import { clusterOfHost } from '../../db/queries/entities';
import { listHosts } from '../../db/queries/hosts';
import { ageText, clockTime, reachabilityOf, type Reachability } from '../../hosts/reachability';
import type { Freshness, HostFreshness } from '../../inventory/sync';

/** What the fleet tools may say of one host's stored inventory: whether it answers, and how current its guests are. */
export interface HostTruth {
	reach: Reachability;
	fresh?: HostFreshness;
	/** `strong has not answered since 14:02 UTC`, or null when its guests are as current as the last sync */
	stale: string | null;
}

/** The short reason a host's guests are not current, or null. */
function staleReason(name: string, reach: Reachability, fresh: HostFreshness | undefined): string | null {
	if (reach.state === 'offline') {
		if (reach.lastAnswerAt && reach.since) return `${name} has not answered since ${clockTime(reach.lastAnswerAt)}`;
		if (reach.since) return /^node /.test(reach.why) ? reach.why : `${name} has never answered`;
		return reach.why;
	}
	if (!fresh?.stale) return null;
	if (fresh.refreshing && !fresh.error) return `${name} is slow to answer a refresh`;
	return `the last read of ${name} failed`;
}

/** Each configured host's truth, from its row, its cluster standing and the freshness a tool just ensured. */
export async function fleetTruth(freshness: Freshness): Promise<Map<string, HostTruth>> {
	const hosts = await listHosts(sql());
	const out = new Map<string, HostTruth>();
	await Promise.all(
		hosts.map(async (h) => {
			const cluster = await clusterOfHost(sql(), h.name);
			const reach = reachabilityOf(h, cluster && { ...cluster.standing, offlineSince: cluster.offlineSince });
			const fresh = freshness[h.name];
			out.set(h.name, { reach, fresh, stale: staleReason(h.name, reach, fresh) });
		})
	);
	return out;
}

/** `last seen 12 min ago (14:02 UTC); strong has not answered since 14:02 UTC` for a guest of a stale host, else null. */
export function guestStale(truth: HostTruth | undefined, seenAt: string): string | null {
	if (!truth?.stale) return null;
	return `last seen ${ageText(seenAt)} ago (${clockTime(seenAt)}); ${truth.stale}: its state now is unknown`;
}
