// Cluster view for the fake binaries: several doubles share $PVE_DOUBLE_CLUSTER/cluster.json,
// which names each member's node name, node id, address and state dir (the guests it holds), and
// whether it is powered (`online`) and still on the corosync link (`link`). Like pmxcfs, every
// member sees every member's guest configs; like corosync, a member sees as online only the
// members of its own partition, and a partition is quorate with more than half of the votes.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fail, listCts, readJson } from './common.mjs';

/**
 * @typedef {{ name: string, nodeid: number, ip: string, stateDir: string, online: boolean, link: boolean }} Member
 * @typedef {{ name: string, configVersion: number, nodes: Member[] }} Cluster
 */

/** @returns {Cluster | undefined} */
export function clusterOf() {
	const dir = process.env.PVE_DOUBLE_CLUSTER;
	if (!dir) return undefined;
	return readJson(join(dir, 'cluster.json'), undefined);
}

/** The members this node's corosync sees (itself included), in node-id order. */
export function partitionOf(cluster, nodeName) {
	const self = cluster.nodes.find((n) => n.name === nodeName);
	if (!self || !self.online || !self.link) return self ? [self] : [];
	return cluster.nodes.filter((n) => n.online && n.link);
}

/** @param {Cluster} cluster @param {string} nodeName */
export function quorate(cluster, nodeName) {
	return partitionOf(cluster, nodeName).length * 2 > cluster.nodes.length;
}

/** A Ctx for another member (its state dir and name). @param {import('./common.mjs').Ctx} ctx @param {Member} m */
export function memberCtx(ctx, m) {
	return { ...ctx, state: m.stateDir, node: m.name, ct: undefined, scopeDir: m.stateDir };
}

function listVmsIn(state) {
	const dir = join(state, 'vms');
	if (!existsSync(dir)) return [];
	return readdirSync(dir)
		.filter((f) => /^\d+\.json$/.test(f))
		.map((f) => readJson(join(dir, f), undefined))
		.filter(Boolean)
		.sort((a, b) => a.vmid - b.vmid);
}

/** Every member's guests as `{ node, kind, guest }` (what /etc/pve/nodes/* holds). */
export function clusterGuests(ctx) {
	const cluster = clusterOf();
	const members = cluster ? cluster.nodes : [{ name: ctx.node, stateDir: ctx.state }];
	return members.flatMap((m) => [
		...listCts({ ...ctx, state: m.stateDir }).map((guest) => ({ node: m.name, kind: 'lxc', guest })),
		...listVmsIn(m.stateDir).map((guest) => ({ node: m.name, kind: 'qemu', guest }))
	]);
}

/** The member (other than this one) that holds the guest id, or undefined. */
export function otherHolder(ctx, vmid) {
	if (!clusterOf()) return undefined; // a standalone node: no other member to ask
	return clusterGuests(ctx).find((g) => g.guest.vmid === vmid && g.node !== ctx.node);
}

/**
 * `check_cfs_quorum`: a member outside a quorate partition has a read-only /etc/pve, so every
 * command that writes a guest config dies before doing anything.
 */
export function requireQuorum(ctx) {
	const cluster = clusterOf();
	if (cluster && !quorate(cluster, ctx.node)) fail('cluster not ready - no quorum?');
}
