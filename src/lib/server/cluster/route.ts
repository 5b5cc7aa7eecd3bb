// Routing for cluster members: a command for a guest goes to the node that holds it, and nothing
// goes to a node that is down or out of quorum. Checked live (the cluster may have changed since
// the last sync) when a request is prepared and again right before it runs.
import type { Client } from 'ssh2';
import { sql } from '../db/index';
import { clusterOfHost, recordClusterView } from '../db/queries/entities';
import { getHostByName, type Host } from '../db/queries/hosts';
import { readClusterView, type ClusterView } from '../proxmox/cluster';
import { withHost } from '../ssh/pool';

export interface RouteGuest {
	kind: 'ct' | 'vm';
	vmid: string;
}

export interface RouteRefusal {
	error: string;
	hint?: string;
}

const READ_MS = 20_000;

/** The cluster as the host sees it, else as the first other configured member that answers. */
async function liveView(host: Host, members: string[]): Promise<{ view: ClusterView; hostError?: string } | { error: string }> {
	let hostError: string;
	try {
		return { view: await withHost(host, (c) => readClusterView(c, host.name, { timeoutMs: READ_MS }), READ_MS) };
	} catch (e) {
		hostError = (e as Error).message;
	}
	for (const name of members.filter((m) => m !== host.name)) {
		const other = await getHostByName(sql(), name);
		if (!other?.hostKeyFingerprint) continue;
		try {
			return { view: await withHost(other, (c) => readClusterView(c, other.name, { timeoutMs: READ_MS }), READ_MS), hostError };
		} catch {
			// the next member
		}
	}
	return { error: hostError };
}

/** Says why the view forbids sending to `host` (for `guest`); null = go. */
export function judge(
	view: ClusterView,
	host: string,
	guest: RouteGuest | undefined,
	mutation: boolean,
	configured: Set<string>,
	hostError?: string
): RouteRefusal | null {
	const node = view.nodes.find((n) => n.node === host);
	if (!node) return { error: `${host} is not a node of cluster ${view.name} (its nodes: ${view.nodes.map((n) => n.node).join(', ')})` };
	if (view.readFrom !== host) {
		if (node.status !== 'online') {
			return {
				error: `node ${host} is ${node.status} in cluster ${view.name} (seen from ${view.readFrom}): nothing is sent to it`,
				hint: 'wait until it is back online; list_entities kind cluster shows the nodes'
			};
		}
		return { error: `node ${host} is online in cluster ${view.name} but does not answer Nomos: ${hostError ?? 'unreachable'}` };
	}
	if (!view.quorate && mutation) {
		return {
			error: `node ${host} has lost quorum in cluster ${view.name} (pvecm status: Quorate: No): Proxmox refuses changes there, so nothing is sent`,
			hint: 'read-only actions still work; changes wait until the cluster is quorate again'
		};
	}
	if (!guest) return null;
	const held = view.guests.find((g) => g.vmid === Number(guest.vmid));
	if (!held || held.node === host) return null;
	const what = held.type === 'lxc' ? 'CT' : 'VM';
	return {
		error: `${what} ${guest.vmid} is on node ${held.node} now, not ${host} (it moved since the last sync): nothing was sent to ${host}`,
		hint: configured.has(held.node)
			? `target ${held.type === 'lxc' ? `lxc:${held.node}/${guest.vmid}` : held.node} instead`
			: `node ${held.node} has no host entry in Nomos: the operator must add it as a host (Settings → Hosts) before its guests can be acted on`
	};
}

/**
 * For a host that is a cluster member (as the last sync recorded), reads the cluster live — over
 * `client` when given (the runner's leased connection), else from the host or, when it does not
 * answer, from another configured member — records what it saw, and refuses a down or non-quorate
 * node or a guest another node holds. A standalone host is never checked (null at once).
 */
export async function clusterRefusal(
	host: Host,
	guest: RouteGuest | undefined,
	opts: { mutation: boolean; client?: Client; signal?: AbortSignal }
): Promise<RouteRefusal | null> {
	const cluster = await clusterOfHost(sql(), host.name);
	if (!cluster) return null;
	let got: Awaited<ReturnType<typeof liveView>>;
	if (opts.client) {
		try {
			got = { view: await readClusterView(opts.client, host.name, { timeoutMs: READ_MS, signal: opts.signal }) };
		} catch (e) {
			got = { error: (e as Error).message };
		}
	} else got = await liveView(host, cluster.members);
	if ('error' in got) {
		return { error: `node ${host.name} of cluster ${cluster.name} does not answer and no other member could be read (${got.error}): nothing is sent to it` };
	}
	await recordClusterView(sql(), got.view).catch(() => undefined);
	const configured = new Set(cluster.members);
	for (const n of got.view.nodes) if (await getHostByName(sql(), n.node)) configured.add(n.node);
	return judge(got.view, host.name, guest, opts.mutation, configured, got.hostError);
}
