// Fake `pct migrate` / `qm migrate`: moves a guest's state from this member's state dir to the
// target member's (what moving /etc/pve/nodes/<a>/lxc/<id>.conf to nodes/<b> does), with the
// checks and messages of PVE 8 (API2/LXC.pm, API2/Qemu.pm, LXC/Migrate.pm, QemuMigrate.pm).
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { clusterOf, memberCtx, partitionOf, requireQuorum } from './cluster.mjs';
import { fail, guestDir, out, paramFail, parseOpts, parseVmid, readJson, sleep, truthy, writeJson } from './common.mjs';
import { nodeEntry, storages } from './model.mjs';

const stamp = () => new Date().toISOString().replace('T', ' ').slice(0, 19);
const log = (s) => out(`${stamp()} ${s}`);
const aborted = (s) => fail(`${stamp()} ERROR: ${s}\n${stamp()} aborting phase 1 - cleanup resources\n${stamp()} ERROR: migration aborted (duration 00:00:01): ${s}\nmigration aborted`);

/** The storages a guest's disks are on: a CT's rootfs, a VM's boot disk and cloud-init drive. */
function volumesOf(kind, g) {
	if (kind === 'lxc') return [String(g.rootfs).split(',')[0]];
	return [g.disk ?? `local-lvm:vm-${g.vmid}-disk-0`, ...(g.ide2 ? [String(g.ide2).split(',')[0]] : [])];
}

/**
 * @param {import('./common.mjs').Ctx} ctx
 * @param {'lxc' | 'qemu'} kind
 * @param {string[]} args `<vmid> <target> [OPTIONS]`
 */
export async function migrate(ctx, kind, args) {
	const tool = kind === 'lxc' ? 'pct' : 'qm';
	const usage = `${tool} migrate <vmid> <target> [OPTIONS]`;
	const { positional, opts } = parseOpts(args, new Set(kind === 'lxc' ? ['restart', 'online'] : ['online', 'with-local-disks', 'force']));
	const vmid = parseVmid(positional[0], usage);
	const target = positional[1];
	if (!target) fail(`400 not enough arguments\n${usage}`);
	const what = kind === 'lxc' ? 'CT' : 'VM';
	const file = (state) => join(state, kind === 'lxc' ? 'cts' : 'vms', `${vmid}.json`);
	const g = readJson(file(ctx.state), undefined);
	if (!g) fail(`Configuration file 'nodes/${ctx.node}/${kind === 'lxc' ? 'lxc' : 'qemu-server'}/${vmid}.conf' does not exist`, 2);
	if (target === ctx.node) paramFail(usage, ['target: target is local node.']);
	const cluster = clusterOf();
	const member = cluster?.nodes.find((n) => n.name === target);
	if (!member) fail(`no such cluster node '${target}'`);
	requireQuorum(ctx);
	if (g.lock) fail(`${what} is locked (${g.lock})`);
	const running = g.status === 'running';
	const online = truthy(opts.get('online'));
	if (kind === 'lxc' && running) {
		if (online) fail('lxc live migration is currently not implemented');
		if (!truthy(opts.get('restart'))) fail("can't migrate running container without --online or --restart");
	}
	if (kind === 'qemu' && running && !online) fail("can't migrate running VM without --online");
	if (!partitionOf(cluster, ctx.node).some((n) => n.name === target)) {
		aborted(`Can't connect to destination address using public key`);
	}
	const there = memberCtx(ctx, member);
	const theirs = storages(there);
	for (const vol of volumesOf(kind, g)) {
		const sid = vol.split(':')[0];
		const s = theirs.find((x) => x.storage === sid);
		if (!s) aborted(`storage '${sid}' is not available on node '${target}'`);
		if (kind === 'qemu' && running && !s.shared && !truthy(opts.get('with-local-disks'))) {
			aborted(`can't live migrate attached local disks without with-local-disks option`);
		}
	}
	const node = nodeEntry(there);
	if (running && node.maxmem - node.mem < g.memory * 1024 ** 2) {
		aborted(`unable to start ${what} ${vmid} on node '${target}': not enough memory (${g.memory} MiB needed, ${Math.floor((node.maxmem - node.mem) / 1024 ** 2)} MiB free)`);
	}
	if (kind === 'lxc' && running) log(`shutdown CT ${vmid}`);
	log(`starting migration of ${what} ${vmid} to node '${target}' (${member.ip})`);
	for (const vol of volumesOf(kind, g)) log(`found local ${kind === 'lxc' ? 'volume' : 'disk'} '${vol}' (in current VM config)`);
	await sleep(ctx.delayMs);
	mkdirSync(join(member.stateDir, kind === 'lxc' ? 'cts' : 'vms'), { recursive: true });
	const moved = running ? { ...g, startedAt: Date.now() } : g;
	writeJson(file(member.stateDir), moved);
	rmSync(file(ctx.state));
	if (existsSync(guestDir(ctx.state, vmid))) {
		mkdirSync(join(member.stateDir, 'guests'), { recursive: true });
		renameSync(guestDir(ctx.state, vmid), guestDir(member.stateDir, vmid));
	}
	if (running) log(kind === 'lxc' ? 'start container on target node' : `starting VM ${vmid} on remote node '${target}'`);
	log('migration finished successfully (duration 00:00:02)');
}
