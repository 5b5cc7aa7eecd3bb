// Fake `pct` (Proxmox Container Toolkit).
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import {
	addSnapshot,
	checkLock as checkGuestLock,
	deleteCt,
	diskGb,
	dropSnapshot,
	err,
	fail,
	guestDir,
	listCts,
	loadCt,
	out,
	paramFail,
	parseOpts,
	parseVmid,
	printSnapshots,
	quietFault,
	resizedGb,
	saveCt,
	truthy,
	withSnapshots
} from './common.mjs';
import { lxcStatus, storages } from './model.mjs';
import { recordTask } from './health.mjs';
import { migrate } from './migrate.mjs';
import { pctCreate } from './pct-create.mjs';

const pad = (s, n) => String(s ?? '').padEnd(n);

function list(ctx) {
	const cts = listCts(ctx);
	if (!cts.length) return;
	const row = (a, b, c, d) => out(`${pad(a, 10)} ${pad(b, 10)} ${pad(c, 12)} ${pad(d, 20)}`);
	row('VMID', 'Status', 'Lock', 'Name');
	for (const ct of cts) row(ct.vmid, ct.status, ct.lock ?? '', ct.hostname);
}

const CONFIG_HIDDEN = new Set(['vmid', 'status', 'startedAt', 'ostemplate', 'snapshots', 'diskUsedGb']);

/** `pct config` prints the config keys sorted, one `key: value` per line. */
function config(ct) {
	for (const k of Object.keys(ct).sort()) {
		if (!CONFIG_HIDDEN.has(k) && ct[k] !== undefined) out(`${k}: ${ct[k]}`);
	}
}

function status(ct, verbose) {
	if (!verbose) return out(`status: ${ct.status}`);
	const s = lxcStatus(ct);
	for (const k of Object.keys(s).sort()) out(`${k}: ${s[k]}`);
}

function setRunning(ctx, ct, running) {
	const { startedAt: _drop, ...rest } = ct;
	saveCt(ctx, running ? { ...rest, status: 'running', startedAt: Date.now() } : { ...rest, status: 'stopped' });
}

const checkLock = (ct) => checkGuestLock(ct, 'CT');

function destroy(ctx, ct, opts) {
	checkLock(ct);
	if (ct.status === 'running' && !truthy(opts.get('force'))) {
		fail(`unable to destroy CT ${ct.vmid} - container is running`);
	}
	if (String(ct.rootfs).startsWith('local-lvm:')) out(`  Logical volume "vm-${ct.vmid}-disk-0" successfully removed.`);
	deleteCt(ctx, ct.vmid);
}

/** Runs the argv directly (no shell) with cwd = the guest's rootfs dir. */
function exec(ctx, ct, argv) {
	if (!argv.length) fail('missing command');
	if (ct.status !== 'running') fail(`CT ${ct.vmid} not running`);
	const rootfs = join(guestDir(ctx.state, ct.vmid), 'rootfs');
	mkdirSync(rootfs, { recursive: true });
	const r = spawnSync(argv[0], argv.slice(1), {
		cwd: rootfs,
		stdio: 'inherit',
		env: { ...process.env, PVE_DOUBLE_CT: String(ct.vmid) }
	});
	if (r.error) {
		fail(`lxc-attach: ${ct.vmid}: ../src/lxc/attach.c: lxc_attach_run_command: 1841 No such file or directory - Failed to exec "${argv[0]}"`);
	}
	if (r.signal) return 128 + (constants.signals[r.signal] ?? 0);
	return r.status ?? 0;
}

/**
 * What stops a start inside its `vzstart` task (recorded with its log, as the node keeps it): the
 * root disk's storage is gone (its error is the task's end, and the CLI prints it), or full (the
 * pre-start hook's mount fails; the CLI says only "startup for container … failed", the cause is
 * in the task log).
 */
function startable(ctx, ct) {
	const store = String(ct.rootfs ?? '').split(':')[0];
	const st = storages(ctx).find((s) => s.storage === store);
	if (store && !st) {
		const why = `storage '${store}' does not exist`;
		recordTask(ctx, 'vzstart', ct.vmid, why, [why, `TASK ERROR: ${why}`]);
		fail(why);
	}
	if (st && st.used >= st.total) {
		const why = `startup for container '${ct.vmid}' failed`;
		recordTask(ctx, 'vzstart', ct.vmid, why, [
			`mount: /var/lib/lxc/.pve-staged-mounts/rootfs: can't read superblock on /dev/mapper/pve-vm--${ct.vmid}--disk--0.`,
			`run_buffer: 571 Script exited with status 32`,
			`lxc_setup_rootfs_prepare_root: 3858 No space left on device - Failed to mount rootfs "/dev/pve/vm-${ct.vmid}-disk-0"`,
			`lxc_init: 845 Failed to run lxc.hook.pre-start for container "${ct.vmid}"`,
			`__lxc_start: 2034 Failed to initialize container "${ct.vmid}"`,
			`TASK ERROR: ${why}`
		]);
		fail(why);
	}
}

const SETTABLE = new Set(['cores', 'memory', 'swap', 'hostname', 'net0', 'features', 'onboot', 'tags', 'description']);

function set(ctx, ct, opts) {
	checkLock(ct);
	const bad = [...opts.keys()].filter((k) => !SETTABLE.has(k));
	if (bad.length) {
		paramFail(
			'pct set <vmid> [OPTIONS]',
			bad.map((k) => `${k}: property is not defined in schema and the schema does not allow additional properties`)
		);
	}
	const next = { ...ct };
	for (const [k, v] of opts) next[k] = ['cores', 'memory', 'swap', 'onboot'].includes(k) ? Number(v) : v;
	saveCt(ctx, next);
}

function transfer(ctx, ct, from, to, push, args) {
	if (!from || !to) fail(`400 not enough arguments\npct ${push ? 'push <vmid> <file> <destination>' : 'pull <vmid> <path> <destination>'} [OPTIONS]`);
	if (ct.status !== 'running') fail(push ? 'can only push files to a running CT' : 'can only pull files from a running VM');
	const rootfs = join(guestDir(ctx.state, ct.vmid), 'rootfs');
	const [src, dst] = push ? [from, join(rootfs, to)] : [join(rootfs, from), to];
	mkdirSync(dirname(dst), { recursive: true });
	try {
		// Like the real tool, a write that breaks off inside the CT still exits 0 (nothing checks it).
		if (push && quietFault(ctx, 'pct', ['pct', 'push', ...args]))
			return void writeFileSync(dst, readFileSync(src).subarray(0, Math.floor(readFileSync(src).length / 2)));
		copyFileSync(src, dst);
	} catch {
		fail(push ? `failed to open ${from} for reading` : `failed to open ${from}: No such file or directory`);
	}
}

// ---- snapshots and disks --------------------------------------------------

const SNAP_FIELDS = ['cores', 'memory', 'swap', 'onboot', 'description', 'hostname', 'net0', 'features', 'rootfs', 'tags'];
const snapDir = (ctx, vmid, name) => join(guestDir(ctx.state, vmid), 'snapshots', name);

function snapshot(ctx, ct, name, opts) {
	if (!name) fail('400 not enough arguments\npct snapshot <vmid> <snapname> [OPTIONS]');
	checkLock(ct);
	if (!String(ct.rootfs).startsWith('local-lvm:')) fail('snapshot feature is not available');
	const snaps = addSnapshot(ct, name, SNAP_FIELDS, opts.get('description'));
	const rootfs = join(guestDir(ctx.state, ct.vmid), 'rootfs');
	mkdirSync(rootfs, { recursive: true });
	cpSync(rootfs, snapDir(ctx, ct.vmid, name), { recursive: true });
	out(`  Logical volume "snap_vm-${ct.vmid}-disk-0_${name}" created.`);
	saveCt(ctx, withSnapshots(ct, snaps));
}

function rollback(ctx, ct, name, opts) {
	if (!name) fail('400 not enough arguments\npct rollback <vmid> <snapname> [OPTIONS]');
	checkLock(ct);
	const snap = ct.snapshots?.[name];
	if (!snap) fail(`snapshot '${name}' does not exist`);
	const { startedAt: _t, ...rest } = ct;
	for (const k of SNAP_FIELDS) delete rest[k];
	const rootfs = join(guestDir(ctx.state, ct.vmid), 'rootfs');
	rmSync(rootfs, { recursive: true, force: true });
	cpSync(snapDir(ctx, ct.vmid, name), rootfs, { recursive: true });
	out(`  Logical volume "vm-${ct.vmid}-disk-0" successfully removed.`);
	out(`  Logical volume "vm-${ct.vmid}-disk-0" created.`);
	const start = truthy(opts.get('start'));
	const { parent: _p, ...next } = { ...rest, ...snap.conf, status: start ? 'running' : 'stopped', ...(start ? { startedAt: Date.now() } : {}) };
	saveCt(ctx, { ...next, parent: name });
}

function delsnapshot(ctx, ct, name) {
	if (!name) fail('400 not enough arguments\npct delsnapshot <vmid> <snapname> [OPTIONS]');
	checkLock(ct);
	const snaps = dropSnapshot(ct, name);
	rmSync(snapDir(ctx, ct.vmid, name), { recursive: true, force: true });
	out(`  Logical volume "snap_vm-${ct.vmid}-disk-0_${name}" successfully removed.`);
	saveCt(ctx, withSnapshots(ct, snaps));
}

function resize(ctx, ct, disk, size) {
	if (!disk || !size) fail('400 not enough arguments\npct resize <vmid> <disk> <size> [OPTIONS]');
	checkLock(ct);
	if (!/^(rootfs|mp\d+)$/.test(disk))
		paramFail('pct resize <vmid> <disk> <size> [OPTIONS]', [`disk: value '${disk}' does not have a value in the enumeration 'rootfs, mp0, mp1, ...'`]);
	if (disk !== 'rootfs') fail(`unable to resize '${disk}' - disk does not exist`);
	const current = diskGb(ct);
	const next = resizedGb(current, size, 'pct resize <vmid> <disk> <size> [OPTIONS]');
	if (next < current) fail('unable to shrink disk size');
	if (next === current) return;
	const lv = `pve/vm-${ct.vmid}-disk-0`;
	const gib = (g) => `${g.toFixed(2)} GiB (${Math.round(g * 256)} extents)`;
	out(`  Size of logical volume ${lv} changed from ${gib(current)} to ${gib(next)}.`);
	out(`  Logical volume ${lv} successfully resized.`);
	out('resize2fs 1.47.0 (5-Feb-2023)');
	if (ct.status === 'running') out(`Filesystem at /dev/${lv} is mounted on /tmp; on-line resizing required`);
	out(`The filesystem on /dev/${lv} is now ${Math.round(next * 262144)} (4k) blocks long.`);
	out('');
	saveCt(ctx, { ...ct, rootfs: String(ct.rootfs).replace(/size=[^,]*/, `size=${Number.isInteger(next) ? next : next.toFixed(2)}G`) });
}

const BOOLEANS = new Set(['purge', 'force', 'destroy-unreferenced-disks', 'verbose', 'skiplock', 'overrule-shutdown', 'start']);

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args @returns {Promise<number | void>} */
export async function pct(ctx, args) {
	const [cmd, ...rest] = args;
	if (cmd === 'create') return pctCreate(ctx, rest);
	if (cmd === 'migrate') return migrate(ctx, 'lxc', rest);
	if (cmd === 'list') return list(ctx);
	const known = [
		'status',
		'config',
		'start',
		'stop',
		'shutdown',
		'reboot',
		'destroy',
		'exec',
		'set',
		'push',
		'pull',
		'unlock',
		'snapshot',
		'rollback',
		'delsnapshot',
		'listsnapshot',
		'resize'
	];
	if (!cmd || !known.includes(cmd)) {
		fail(`ERROR: unknown command 'pct${cmd ? ` ${cmd}` : ''}'\nUSAGE: pct <COMMAND> [ARGS] [OPTIONS]`);
	}
	const { positional, opts, extra } = parseOpts(rest, BOOLEANS);
	const ct = loadCt(ctx, parseVmid(positional[0], `pct ${cmd} <vmid> [OPTIONS]`));
	switch (cmd) {
		case 'status':
			return status(ct, truthy(opts.get('verbose')));
		case 'config':
			return config(ct);
		case 'start':
			if (ct.status === 'running') fail(`CT ${ct.vmid} already running`);
			// The lock is checked before the start task is forked (pve-container API2/LXC/Status.pm
			// vm_start: check_lock in the lock_config sub, then fork_worker('vzstart')): no task.
			checkLock(ct);
			startable(ctx, ct);
			// The `quiet` fault: the start "works" (exit 0) but the CT is stopped again at once.
			if (quietFault(ctx, 'pct', ['pct', 'start', ...rest])) return;
			return setRunning(ctx, ct, true);
		case 'stop':
		case 'shutdown':
			if (ct.status !== 'running') fail(`CT ${ct.vmid} not running`);
			return setRunning(ctx, ct, false);
		case 'reboot':
			if (ct.status !== 'running') fail(`CT ${ct.vmid} not running`);
			return setRunning(ctx, ct, true);
		case 'destroy':
			return destroy(ctx, ct, opts);
		case 'unlock': {
			// Like Proxmox: removes the lock whatever it was; silent and exit 0.
			const { lock: _lock, ...rest } = ct;
			return saveCt(ctx, rest);
		}
		case 'exec':
			return exec(ctx, ct, extra ?? positional.slice(1));
		case 'set':
			return set(ctx, ct, opts);
		case 'push':
			return transfer(ctx, ct, positional[1], positional[2], true, rest);
		case 'pull':
			return transfer(ctx, ct, positional[1], positional[2], false, rest);
		case 'snapshot':
			return snapshot(ctx, ct, positional[1], opts);
		case 'rollback':
			return rollback(ctx, ct, positional[1], opts);
		case 'delsnapshot':
			return delsnapshot(ctx, ct, positional[1]);
		case 'listsnapshot':
			return printSnapshots(ct);
		case 'resize':
			return resize(ctx, ct, positional[1], positional[2]);
	}
	err('unreachable');
	return 255;
}
