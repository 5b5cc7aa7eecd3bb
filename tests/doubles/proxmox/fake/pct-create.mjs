// `pct create <vmid> <ostemplate> [OPTIONS]` with streamed, realistic task output.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { otherHolder } from './cluster.mjs';
import {
	appendLine,
	ctExists,
	deleteCt,
	err,
	fail,
	guestDir,
	hangForever,
	hwaddrFor,
	out,
	paramFail,
	parseOpts,
	parseVmid,
	readFaults,
	reserveCt,
	saveCt,
	sleep,
	truthy,
	vmExists
} from './common.mjs';
import { templates } from './model.mjs';

const USAGE = 'pct create <vmid> <ostemplate> [OPTIONS]';
const KNOWN = new Set([
	'arch',
	'bwlimit',
	'cmode',
	'console',
	'cores',
	'cpulimit',
	'cpuunits',
	'description',
	'features',
	'force',
	'ha-managed',
	'hookscript',
	'hostname',
	'ignore-unpack-errors',
	'memory',
	'nameserver',
	'net0',
	'net1',
	'net2',
	'net3',
	'onboot',
	'ostype',
	'password',
	'pool',
	'protection',
	'restore',
	'rootfs',
	'searchdomain',
	'ssh-public-keys',
	'start',
	'startup',
	'storage',
	'swap',
	'tags',
	'timezone',
	'tty',
	'unique',
	'unprivileged'
]);
const BOOLEANS = new Set(['console', 'force', 'ha-managed', 'ignore-unpack-errors', 'onboot', 'protection', 'restore', 'start', 'unique', 'unprivileged']);
const INTS = ['cores', 'memory', 'swap'];
const STORAGES = { local: { rootdir: false }, 'local-lvm': { rootdir: true } };

/** name=eth0 first, remaining keys sorted, hwaddr + type=veth filled in (as PVE prints net0). */
function normalizeNet(raw, vmid) {
	const kv = new Map(
		raw.split(',').map((p) => {
			const i = p.indexOf('=');
			return /** @type {[string, string]} */ (i < 0 ? [p, ''] : [p.slice(0, i), p.slice(i + 1)]);
		})
	);
	if (!kv.has('hwaddr')) kv.set('hwaddr', hwaddrFor(vmid));
	if (!kv.has('type')) kv.set('type', 'veth');
	const name = kv.get('name') ?? 'eth0';
	kv.delete('name');
	const rest = [...kv.keys()].sort().map((k) => `${k}=${kv.get(k)}`);
	return [`name=${name}`, ...rest].join(',');
}

function parseRootfs(opts, vmid) {
	const storage = opts.get('storage') ?? 'local';
	const raw = opts.get('rootfs') ?? `${storage}:4`;
	const spec = /^\d+(\.\d+)?$/.test(raw) ? `${storage}:${raw}` : raw;
	const m = /^([a-z][a-z0-9._-]*):(\d+(?:\.\d+)?)(?:,.*)?$/i.exec(spec);
	if (!m) paramFail(USAGE, [`rootfs: unable to parse rootfs '${raw}'`]);
	const [, sid, size] = m;
	if (!(sid in STORAGES)) fail(`storage '${sid}' does not exist`);
	if (!STORAGES[sid].rootdir) {
		paramFail(USAGE, [`storage: storage '${sid}' does not support container directories`]);
	}
	return { sid, sizeGb: Number(size), volume: `${sid}:vm-${vmid}-disk-0,size=${size}G` };
}

/** The create's arguments as PVE checks them, without looking at the host's containers. */
function parseCreate(args) {
	const { positional, opts } = parseOpts(args, BOOLEANS);
	const vmid = parseVmid(positional[0], USAGE);
	const template = positional[1];
	if (template === undefined) fail(`400 not enough arguments\n${USAGE}`);
	const unknown = [...opts.keys()].filter((k) => !KNOWN.has(k));
	if (unknown.length) {
		paramFail(
			USAGE,
			unknown.map((k) => `${k}: property is not defined in schema and the schema does not allow additional properties`)
		);
	}
	for (const k of INTS) {
		const v = opts.get(k);
		if (v !== undefined && !/^\d+$/.test(v)) paramFail(USAGE, [`${k}: type check ('integer') failed - got '${v}'`]);
	}
	const pw = opts.get('password');
	if (pw !== undefined && pw.length < 5) paramFail(USAGE, ['password: value must be at least 5 characters long']);
	return { vmid, template, opts };
}

function validate(ctx, args) {
	const { vmid, template, opts } = parseCreate(args);
	// PVE checks the id before storages, hence no "unable to create" prefix, and names the guest that
	// holds it (pve-container stable-bookworm src/PVE/API2/LXC.pm create_vm: `PVE::Cluster::check_vmid_unused($vmid);`;
	// pve-cluster src/PVE/Cluster.pm: `my $vmtypestr = $d->{type} eq 'qemu' ? 'VM' : 'CT'; die "$vmtypestr $vmid already exists on node '$d->{node}'\n";`).
	if (ctExists(ctx, vmid)) fail(`CT ${vmid} already exists on node '${ctx.node}'`);
	if (vmExists(ctx, vmid)) fail(`VM ${vmid} already exists on node '${ctx.node}'`);
	const held = otherHolder(ctx, vmid); // another member's guest: the id space is cluster-wide
	if (held) fail(`${held.kind === 'lxc' ? 'CT' : 'VM'} ${vmid} already exists on node '${held.node}'`);
	return { vmid, template, opts, rootfs: parseRootfs(opts, vmid) };
}

function buildCt(vmid, template, opts, rootfs) {
	const file = template.split('/').pop() ?? template;
	/** @type {Record<string, unknown>} */
	const ct = {
		vmid,
		hostname: opts.get('hostname') ?? `CT${vmid}`,
		status: 'stopped',
		arch: opts.get('arch') ?? 'amd64',
		cores: Number(opts.get('cores') ?? 1),
		memory: Number(opts.get('memory') ?? 512),
		swap: Number(opts.get('swap') ?? 512),
		ostype: opts.get('ostype') ?? (file.split('-')[0] || 'unmanaged'),
		rootfs: rootfs.volume,
		unprivileged: opts.has('unprivileged') ? (truthy(opts.get('unprivileged')) ? 1 : 0) : 1,
		ostemplate: template
	};
	if (opts.has('net0')) ct.net0 = normalizeNet(opts.get('net0'), vmid);
	if (opts.has('features')) ct.features = opts.get('features');
	if (opts.has('onboot')) ct.onboot = truthy(opts.get('onboot')) ? 1 : 0;
	if (opts.has('tags')) ct.tags = opts.get('tags');
	return ct;
}

const fakeFingerprint = (seed) => createHash('sha256').update(seed).digest('base64').replace(/=+$/, '');

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export async function pctCreate(ctx, args) {
	const { vmid, template, opts, rootfs } = validate(ctx, args);
	const ct = buildCt(vmid, template, opts, rootfs);
	if (!reserveCt(ctx, { ...ct, lock: 'create' })) fail(`CT ${vmid} already exists on node '${ctx.node}'`);

	const fault = readFaults(ctx).create;
	out(`  Logical volume "vm-${vmid}-disk-0" created.`);
	await sleep(ctx.delayMs);
	if (fault === 'hang') return hangForever(ctx, 'pct');
	if (typeof fault === 'object' && fault && typeof fault.slow === 'number') return forkTask(ctx, args, fault.slow);
	return finishCreate(ctx, args, fault);
}

const TASK_WORKER = fileURLToPath(new URL('./task-worker.mjs', import.meta.url));

/**
 * As PVE's fork_worker: the rest of the create runs in a child process (same process group) that
 * waits `ms` first, while this process waits for it and passes on its exit. A signal to this
 * process alone (all sshd delivers) leaves the worker to finish the create later: the ghost.
 * @param {import('./common.mjs').Ctx} ctx @param {string[]} args @param {number} ms
 */
function forkTask(ctx, args, ms) {
	const child = spawn(process.execPath, [TASK_WORKER, JSON.stringify({ task: 'create', args, ms })], { stdio: 'inherit' });
	appendLine(join(ctx.state, 'tasks.log'), JSON.stringify({ pid: process.pid, worker: child.pid, tool: 'pct', argv: ['pct', 'create', ...args] }));
	return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 255)));
}

/** Everything after the volume was made: filesystem, template extraction, keys; then the config is saved unlocked. */
export async function finishCreate(ctx, args, fault) {
	const { vmid, template, opts } = parseCreate(args);
	const rootfs = parseRootfs(opts, vmid);
	const ct = buildCt(vmid, template, opts, rootfs);
	const lv = `vm-${vmid}-disk-0`;
	const step = async (line) => {
		out(line);
		await sleep(ctx.delayMs);
	};
	const abort = (message) => {
		out(`  Logical volume "${lv}" successfully removed.`);
		deleteCt(ctx, vmid);
		fail(`unable to create CT ${vmid} - ${message}`);
	};

	const blocks = Math.round(rootfs.sizeGb * 262144);
	await step(`Creating filesystem with ${blocks} 4k blocks and ${Math.floor(blocks / 4)} inodes`);
	await step(`Filesystem UUID: ${fakeUuid(vmid)}`);
	await step('Superblock backups stored on blocks: \n\t32768, 98304, 163840, 229376, 294912, 819200, 884736, 1605632');
	await step('');
	await step('Allocating group tables: done                            ');
	await step('Writing inode tables: done                            ');
	await step('Creating journal (16384 blocks): done');
	await step('Multiple mount protection is enabled with update interval 5 seconds.');
	await step('Writing superblocks and filesystem accounting information: done');
	await step('');
	if (!templates(ctx).includes(template)) abort(`volume '${template}' does not exist`);

	const file = template.split('/').pop();
	await step(`extracting archive '/var/lib/vz/template/cache/${file}'`);
	if (fault === 'fail') {
		err('tar: ./usr/lib/x86_64-linux-gnu/libLLVM-15.so.1: Cannot write: No space left on device');
		err('tar: Exiting with failure status due to previous errors');
		abort(
			`command 'lxc-usernsexec -m u:0:100000:65536 -m g:0:100000:65536 -- tar xpf - --zstd --totals --one-file-system -p --sparse --numeric-owner --acls --xattrs '--xattrs-include=user.*' '--xattrs-include=security.capability' '--warning=no-file-ignored' '--warning=no-xattr-write' -C /var/lib/lxc/${vmid}/rootfs --skip-old-files --anchored --exclude './dev/*'' failed: exit code 2`
		);
	}
	await step('Total bytes read: 524288000 (500MiB, 250MiB/s)');
	await step(`Detected OS distribution '${ct.ostype}'`);
	for (const kind of ['rsa', 'ecdsa', 'ed25519']) {
		await step(`Creating SSH host key 'ssh_host_${kind}_key' - this may take some time ...`);
		await step(`done: SHA256:${fakeFingerprint(`${vmid}-${kind}`)} root@${ct.hostname}`);
	}

	mkdirSync(join(guestDir(ctx.state, vmid), 'rootfs'), { recursive: true });
	const start = truthy(opts.get('start'));
	saveCt(ctx, start ? { ...ct, status: 'running', startedAt: Date.now() } : ct);
}

function fakeUuid(vmid) {
	const h = createHash('md5').update(`fs-${vmid}`).digest('hex');
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
