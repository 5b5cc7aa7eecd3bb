// Fake `pct` (Proxmox Container Toolkit).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import {
	deleteCt, err, fail, guestDir, listCts, loadCt, out, paramFail, parseOpts, parseVmid, saveCt, truthy
} from './common.mjs';
import { lxcStatus } from './model.mjs';
import { pctCreate } from './pct-create.mjs';

const pad = (s, n) => String(s ?? '').padEnd(n);

function list(ctx) {
	const cts = listCts(ctx);
	if (!cts.length) return;
	const row = (a, b, c, d) => out(`${pad(a, 10)} ${pad(b, 10)} ${pad(c, 12)} ${pad(d, 20)}`);
	row('VMID', 'Status', 'Lock', 'Name');
	for (const ct of cts) row(ct.vmid, ct.status, ct.lock ?? '', ct.hostname);
}

const CONFIG_HIDDEN = new Set(['vmid', 'status', 'startedAt', 'ostemplate']);

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

function checkLock(ct) {
	if (ct.lock) fail(`CT is locked (${ct.lock})`);
}

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

const SETTABLE = new Set(['cores', 'memory', 'swap', 'hostname', 'net0', 'features', 'onboot', 'tags', 'description']);

function set(ctx, ct, opts) {
	checkLock(ct);
	const bad = [...opts.keys()].filter((k) => !SETTABLE.has(k));
	if (bad.length) {
		paramFail('pct set <vmid> [OPTIONS]', bad.map((k) => `${k}: property is not defined in schema and the schema does not allow additional properties`));
	}
	const next = { ...ct };
	for (const [k, v] of opts) next[k] = ['cores', 'memory', 'swap', 'onboot'].includes(k) ? Number(v) : v;
	saveCt(ctx, next);
}

function transfer(ctx, ct, from, to, push) {
	if (!from || !to) fail(`400 not enough arguments\npct ${push ? 'push <vmid> <file> <destination>' : 'pull <vmid> <path> <destination>'} [OPTIONS]`);
	if (ct.status !== 'running') fail(push ? 'can only push files to a running CT' : 'can only pull files from a running VM');
	const rootfs = join(guestDir(ctx.state, ct.vmid), 'rootfs');
	const [src, dst] = push ? [from, join(rootfs, to)] : [join(rootfs, from), to];
	mkdirSync(dirname(dst), { recursive: true });
	try {
		copyFileSync(src, dst);
	} catch {
		fail(push ? `failed to open ${from} for reading` : `failed to open ${from}: No such file or directory`);
	}
}

const BOOLEANS = new Set(['purge', 'force', 'destroy-unreferenced-disks', 'verbose', 'skiplock', 'overrule-shutdown']);

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args @returns {Promise<number | void>} */
export async function pct(ctx, args) {
	const [cmd, ...rest] = args;
	if (cmd === 'create') return pctCreate(ctx, rest);
	if (cmd === 'list') return list(ctx);
	const known = ['status', 'config', 'start', 'stop', 'shutdown', 'reboot', 'destroy', 'exec', 'set', 'push', 'pull', 'unlock'];
	if (!cmd || !known.includes(cmd)) {
		fail(`ERROR: unknown command 'pct${cmd ? ` ${cmd}` : ''}'\nUSAGE: pct <COMMAND> [ARGS] [OPTIONS]`);
	}
	const { positional, opts, extra } = parseOpts(rest, BOOLEANS);
	const ct = loadCt(ctx, parseVmid(positional[0], `pct ${cmd} <vmid> [OPTIONS]`));
	switch (cmd) {
		case 'status': return status(ct, truthy(opts.get('verbose')));
		case 'config': return config(ct);
		case 'start':
			if (ct.status === 'running') fail(`CT ${ct.vmid} already running`);
			checkLock(ct);
			return setRunning(ctx, ct, true);
		case 'stop':
		case 'shutdown':
			if (ct.status !== 'running') fail(`CT ${ct.vmid} not running`);
			return setRunning(ctx, ct, false);
		case 'reboot':
			if (ct.status !== 'running') fail(`CT ${ct.vmid} not running`);
			return setRunning(ctx, ct, true);
		case 'destroy': return destroy(ctx, ct, opts);
		case 'unlock': {
			// Like Proxmox: removes the lock whatever it was; silent and exit 0.
			const { lock: _lock, ...rest } = ct;
			return saveCt(ctx, rest);
		}
		case 'exec': return exec(ctx, ct, extra ?? positional.slice(1));
		case 'set': return set(ctx, ct, opts);
		case 'push': return transfer(ctx, ct, positional[1], positional[2], true);
		case 'pull': return transfer(ctx, ct, positional[1], positional[2], false);
	}
	err('unreachable');
	return 255;
}
