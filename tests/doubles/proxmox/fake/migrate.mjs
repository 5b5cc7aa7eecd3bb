// Fake `pct migrate` / `qm migrate`: moves a guest's state from this member's state dir to the
// target member's (what moving /etc/pve/nodes/<a>/lxc/<id>.conf to nodes/<b> does), with the
// checks, their order and the messages of PVE 8, checked against pve-container stable-bookworm
// (src/PVE/API2/LXC.pm migrate_vm, src/PVE/LXC/Migrate.pm), qemu-server stable-bookworm
// (src/PVE/API2/Qemu.pm migrate_vm, src/PVE/QemuMigrate.pm) and pve-guest-common
// (src/PVE/AbstractMigrate.pm). Two stages, as there:
// - the API call checks (target, quorum, node, config, running without --online/--restart, and
//   for qm the lock and the storages) and dies: the message on stderr, exit 255;
// - the migration task (fork_worker, run in the foreground by the CLI) logs `<date> <line>` on
//   stdout, an error as `<date> ERROR: …`; when it fails the CLI prints only the task's error,
//   `migration aborted`, on stderr and exits 255 (qm.pm/pct.pm $upid_exit: `exit(… ? -1 : 0)`).
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { clusterOf, memberCtx, partitionOf, requireQuorum } from './cluster.mjs';
import { Exit, fail, guestDir, out, paramFail, parseOpts, parseVmid, readJson, sleep, truthy, writeJson } from './common.mjs';
import { nodeEntry, storages } from './model.mjs';

const stamp = () => new Date().toISOString().replace('T', ' ').slice(0, 19);
// AbstractMigrate.pm $msg2text: `strftime("%F %H:%M:%S", localtime)`, ` ERROR:` for level 'err'
const log = (s) => out(`${stamp()} ${s}`);
const logErr = (s) => out(`${stamp()} ERROR: ${s}`);
/** The task died: AbstractMigrate::migrate logs `migration aborted (duration …): <err>` and dies "migration aborted\n". */
function taskAborted(err) {
	logErr(`migration aborted (duration 00:00:01): ${err}`);
	throw new Exit(255, 'migration aborted');
}
/** A phase1 error: logged, `aborting phase 1 - cleanup resources`, then the task aborts. */
function phase1Failed(err) {
	logErr(err);
	log('aborting phase 1 - cleanup resources');
	taskAborted(err);
}

/** The options each tool's migrate takes (migrate_vm's parameters in PVE 8). */
const OPTIONS = {
	lxc: new Set(['online', 'restart', 'timeout', 'target-storage', 'bwlimit']),
	qemu: new Set(['online', 'force', 'with-local-disks', 'targetstorage', 'bwlimit', 'migration_type', 'migration_network'])
};

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
	const unknown = [...opts.keys()].filter((k) => !OPTIONS[kind].has(k));
	if (unknown.length)
		paramFail(
			usage,
			unknown.map((k) => `${k}: property is not defined in schema and the schema does not allow additional properties`)
		);
	const vmid = parseVmid(positional[0], usage);
	const target = positional[1];
	if (!target) fail(`400 not enough arguments\n${usage}`);
	const what = kind === 'lxc' ? 'CT' : 'VM';
	const file = (state) => join(state, kind === 'lxc' ? 'cts' : 'vms', `${vmid}.json`);

	// ---- the API call (migrate_vm), in its order
	if (target === ctx.node) paramFail(usage, ['target: target is local node.']);
	requireQuorum(ctx); // PVE::Cluster::check_cfs_quorum()
	const cluster = clusterOf();
	const member = cluster?.nodes.find((n) => n.name === target);
	if (!member) fail(`no such cluster node '${target}'`); // PVE::Cluster::check_node_exists
	const g = readJson(file(ctx.state), undefined);
	if (!g) fail(`Configuration file 'nodes/${ctx.node}/${kind === 'lxc' ? 'lxc' : 'qemu-server'}/${vmid}.conf' does not exist`, 2);
	const running = g.status === 'running';
	const online = truthy(opts.get('online'));
	const restart = truthy(opts.get('restart'));
	const there = memberCtx(ctx, member);
	const theirs = storages(there);
	const missingStorage = () =>
		volumesOf(kind, g)
			.map((vol) => vol.split(':')[0])
			.find((sid) => !theirs.some((x) => x.storage === sid));
	if (kind === 'qemu') {
		if (g.lock) fail(`VM is locked (${g.lock})`); // PVE::QemuConfig->check_lock($conf)
		if (running && !online) fail("can't migrate running VM without --online");
		const sid = missingStorage(); // PVE::QemuServer::check_storage_availability → storage_check_enabled($storecfg, $sid, $node)
		if (sid) fail(`storage '${sid}' is not available on node '${target}'`);
	} else if (running && !online && !restart) {
		fail("can't migrate running container without --online or --restart");
	}

	// ---- the migration task: prepare
	if (kind === 'lxc') {
		if (g.lock) taskAborted(`CT is locked (${g.lock})`);
		if (running && online) taskAborted('lxc live migration is currently not implemented');
		const sid = missingStorage();
		if (sid) taskAborted(`storage '${sid}' is not available on node '${target}'`);
	}
	// `[@{ $self->{rem_ssh} }, '/bin/true']` fails for a member outside this partition
	if (!partitionOf(cluster, ctx.node).some((n) => n.name === target)) taskAborted(`Can't connect to destination address using public key`);
	if (kind === 'lxc' && running) log(`shutdown CT ${vmid}`);

	// ---- phase1
	log(`starting migration of ${what} ${vmid} to node '${target}' (${member.ip})`);
	if (kind === 'qemu') {
		// QemuMigrate.pm scan_local_volumes: each local disk is logged; a running VM's attached local
		// disk without with-local-disks is an error, listed as a warning, then "can't migrate VM - check log"
		const local = volumesOf(kind, g).filter((vol) => !theirs.find((x) => x.storage === vol.split(':')[0])?.shared);
		const refused = running && !truthy(opts.get('with-local-disks')) ? local : [];
		for (const vol of local) log(`found local disk '${vol}' (attached)`);
		for (const vol of refused) log(`can't migrate local disk '${vol}': can't live migrate attached local disks without with-local-disks option`);
		if (refused.length) phase1Failed("can't migrate VM - check log");
	} else {
		for (const vol of volumesOf(kind, g)) log(`found local volume '${vol}' (in current VM config)`);
	}
	// Not from the sources: PVE checks no memory before a move. The double fails here, in phase 1
	// (nothing moved), where the real thing would move the guest and then fail to start it there.
	const node = nodeEntry(there);
	if (running && node.maxmem - node.mem < g.memory * 1024 ** 2) {
		phase1Failed(
			`unable to start ${what} ${vmid} on node '${target}': not enough memory (${g.memory} MiB needed, ${Math.floor((node.maxmem - node.mem) / 1024 ** 2)} MiB free)`
		);
	}
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
