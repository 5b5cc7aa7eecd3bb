// Fake `qm` (state in vms/<vmid>.json): list, status, config, create from a cloud image
// (import-from, cloud-init drive, agent), clone, template, set, resize, snapshots, start,
// stop, shutdown (timeout), reboot, destroy --purge, unlock and the guest agent's ping /
// network-get-interfaces. Errors read as the real tool's.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
	addSnapshot,
	checkLock as checkGuestLock,
	ctExists,
	dropSnapshot,
	fail,
	hwaddrFor,
	listGuests,
	out,
	paramFail,
	parseOpts,
	parseVmid,
	printSnapshots,
	readJson,
	resizedGb,
	sleep,
	truthy,
	vmExists,
	withSnapshots,
	writeJson
} from './common.mjs';
import { otherHolder } from './cluster.mjs';
import { migrate } from './migrate.mjs';
import { vmImages } from './model.mjs';

const vmFile = (ctx, vmid) => join(ctx.state, 'vms', `${vmid}.json`);

export const listVms = (ctx) => listGuests(ctx, 'vms');

function loadVm(ctx, vmid) {
	const vm = readJson(vmFile(ctx, vmid), undefined);
	if (!vm) fail(`Configuration file 'nodes/${ctx.node}/qemu-server/${vmid}.conf' does not exist`, 2);
	return vm;
}

const save = (ctx, vm) => writeJson(vmFile(ctx, vm.vmid), vm);
const pid = (vm) => (vm.status === 'running' ? 200000 + vm.vmid : 0);
const checkLock = (vm) => checkGuestLock(vm, 'VM');
const gib = (g) => (Number.isInteger(g) ? `${g}G` : `${g.toFixed(2)}G`);

/** The boot disk's volume (without size): seeded VMs have one on local-lvm. */
const diskVolume = (vm) => vm.disk ?? `local-lvm:${vm.template ? 'base' : 'vm'}-${vm.vmid}-disk-0`;

/** What `qm config` prints (and snapshots keep): the settable keys plus the drives. */
function configOf(vm) {
	/** @type {Record<string, unknown>} */
	const c = {
		agent: vm.agent,
		balloon: vm.balloon,
		boot: vm.boot ?? 'order=scsi0',
		ciuser: vm.ciuser,
		cores: vm.cores,
		description: vm.description,
		ide2: vm.ide2,
		ipconfig0: vm.ipconfig0,
		lock: vm.lock,
		memory: vm.memory,
		name: vm.name,
		net0: vm.net0 ?? `virtio=${hwaddrFor(vm.vmid)},bridge=vmbr0`,
		onboot: vm.onboot,
		parent: vm.parent,
		scsi0: `${diskVolume(vm)},size=${gib(vm.diskGb)}`,
		scsihw: vm.scsihw ?? 'virtio-scsi-pci',
		serial0: vm.serial0,
		sshkeys: vm.sshkeys,
		tags: vm.tags,
		template: vm.template,
		vga: vm.vga
	};
	return Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined));
}

function list(ctx) {
	const vms = listVms(ctx);
	if (!vms.length) return;
	const row = (a, b, c, d, e, f) =>
		`${String(a).padStart(10)} ${String(b).padEnd(20)} ${String(c).padEnd(10)} ${String(d).padEnd(10)} ${String(e).padStart(12)} ${String(f).padEnd(10)}`;
	out(row('VMID', 'NAME', 'STATUS', 'MEM(MB)', 'BOOTDISK(GB)', 'PID'));
	for (const vm of vms) out(row(vm.vmid, vm.name, vm.status, vm.memory, vm.diskGb.toFixed(2), pid(vm)));
}

function status(vm, verbose) {
	out(`status: ${vm.status}`);
	if (!verbose) return;
	out(`cpus: ${vm.cores}`);
	if (vm.lock) out(`lock: ${vm.lock}`);
	out(`maxdisk: ${Math.round(vm.diskGb * 1024 ** 3)}`);
	out(`maxmem: ${vm.memory * 1024 ** 2}`);
	out(`name: ${vm.name}`);
	if (vm.status === 'running') out(`pid: ${pid(vm)}`);
	out(`qmpstatus: ${vm.status}`);
	if (vm.template) out('template: 1');
	out(`uptime: ${vm.status === 'running' ? Math.max(1, Math.floor((Date.now() - (vm.startedAt ?? Date.now())) / 1000)) : 0}`);
	out(`vmid: ${vm.vmid}`);
}

// ---- create -----------------------------------------------------------------

const CREATE_USAGE = 'qm create <vmid> [OPTIONS]';
const CREATE_KNOWN = new Set([
	'name',
	'memory',
	'cores',
	'sockets',
	'net0',
	'scsihw',
	'scsi0',
	'ide2',
	'boot',
	'serial0',
	'vga',
	'agent',
	'ciuser',
	'cipassword',
	'ipconfig0',
	'sshkeys',
	'nameserver',
	'searchdomain',
	'ostype',
	'onboot',
	'tags',
	'description',
	'balloon',
	'cpu',
	'start'
]);
const DISK_STORAGES = new Set(['local-lvm']);

/** Parses `<storage>:0,import-from=<source>` and checks the source exists on the host. */
function importDisk(ctx, raw) {
	const m = /^([a-z][a-z0-9._-]*):0,import-from=([^,]+)$/i.exec(raw ?? '');
	if (!m) paramFail(CREATE_USAGE, [`scsi0: invalid format - expected '<storage>:0,import-from=<source>' (this double knows only that form)`]);
	const [, storage, source] = m;
	if (!DISK_STORAGES.has(storage)) fail(`storage '${storage}' does not exist or does not support images`);
	const image = vmImages(ctx).find((i) => i.path === source);
	if (!image) {
		fail(source.startsWith('/') ? `unable to create VM - source '${source}' does not exist` : `unable to parse volume ID '${source}'`);
	}
	return { storage, source, sizeGb: image.sizeGb };
}

async function create(ctx, args) {
	const { positional, opts } = parseOpts(args, new Set(['onboot', 'start']));
	const vmid = parseVmid(positional[0], CREATE_USAGE);
	const unknown = [...opts.keys()].filter((k) => !CREATE_KNOWN.has(k));
	if (unknown.length)
		paramFail(
			CREATE_USAGE,
			unknown.map((k) => `${k}: property is not defined in schema and the schema does not allow additional properties`)
		);
	for (const k of ['memory', 'cores']) {
		const v = opts.get(k);
		if (v !== undefined && !/^\d+$/.test(v)) paramFail(CREATE_USAGE, [`${k}: type check ('integer') failed - got '${v}'`]);
	}
	// qemu-server stable-bookworm src/PVE/API2/Qemu.pm create_vm: `eval { PVE::QemuConfig->create_and_lock_config($vmid, $force) };
	// die "$emsg $@" if $@;`, whose check_vmid_unused names the guest holding the id ('VM' or 'CT')
	if (vmExists(ctx, vmid)) fail(`unable to create VM ${vmid} - VM ${vmid} already exists on node '${ctx.node}'`);
	if (ctExists(ctx, vmid)) fail(`unable to create VM ${vmid} - CT ${vmid} already exists on node '${ctx.node}'`);
	const held = otherHolder(ctx, vmid);
	if (held) fail(`unable to create VM ${vmid} - ${held.kind === 'lxc' ? 'CT' : 'VM'} ${vmid} already exists on node '${held.node}'`);
	let sshkeys;
	if (opts.has('sshkeys')) {
		const file = opts.get('sshkeys');
		if (!file || !existsSync(file)) fail(`unable to open file '${file}' - No such file or directory`);
		sshkeys = encodeURIComponent(readFileSync(file, 'utf8'));
	}
	const disk = opts.has('scsi0') ? importDisk(ctx, opts.get('scsi0')) : undefined;
	const ide2 = opts.get('ide2');
	if (ide2 !== undefined && !/^[a-z][a-z0-9._-]*:cloudinit$/i.test(ide2))
		paramFail(CREATE_USAGE, [`ide2: invalid format - this double knows only '<storage>:cloudinit'`]);
	const net = opts.get('net0');
	const bridge = net ? /bridge=([^,]+)/.exec(net)?.[1] : undefined;
	if (net && !/^virtio(,|$)/.test(net)) paramFail(CREATE_USAGE, [`net0: invalid format - this double knows only 'virtio,bridge=<bridge>'`]);

	/** @type {Record<string, unknown>} */
	const vm = {
		vmid,
		name: opts.get('name') ?? `VM${vmid}`,
		status: 'stopped',
		cores: Number(opts.get('cores') ?? 1),
		memory: Number(opts.get('memory') ?? 512),
		diskGb: disk?.sizeGb ?? 0,
		lock: 'create'
	};
	save(ctx, vm);
	if (disk) {
		out(`transferred 0.0 B of ${disk.sizeGb.toFixed(1)} GiB (0.00%)`);
		await sleep(ctx.delayMs);
		out(`transferred ${disk.sizeGb.toFixed(1)} GiB of ${disk.sizeGb.toFixed(1)} GiB (100.00%)`);
		vm.disk = `${disk.storage}:vm-${vmid}-disk-0`;
		vm.importedFrom = disk.source;
	}
	if (ide2) {
		out(`  Logical volume "vm-${vmid}-cloudinit" created.`);
		vm.ide2 = `${ide2.split(':')[0]}:vm-${vmid}-cloudinit,media=cdrom`;
	}
	if (net) vm.net0 = `virtio=${hwaddrFor(vmid)},bridge=${bridge ?? 'vmbr0'}`;
	for (const k of ['scsihw', 'boot', 'serial0', 'vga', 'agent', 'ciuser', 'ipconfig0', 'tags', 'description']) if (opts.has(k)) vm[k] = opts.get(k);
	if (sshkeys) vm.sshkeys = sshkeys;
	delete vm.lock;
	save(ctx, vm);
	if (truthy(opts.get('start'))) save(ctx, { ...vm, status: 'running', startedAt: Date.now() });
}

// ---- clone, template, set, resize ---------------------------------------------

function clone(ctx, src, args) {
	const { positional, opts } = parseOpts(args, new Set(['full']));
	const newid = parseVmid(positional[0], 'qm clone <vmid> <newid> [OPTIONS]');
	checkLock(src);
	if (vmExists(ctx, newid) || ctExists(ctx, newid) || otherHolder(ctx, newid)) fail(`unable to create VM ${newid}: config file already exists`);
	const full = opts.has('full') ? truthy(opts.get('full')) : !src.template;
	if (!full && !src.template) fail(`Linked clone feature is not available for drive 'scsi0'`);
	const name = opts.get('name') ?? `Copy-of-VM-${src.name}`;
	out(`create ${full ? 'full' : 'linked'} clone of drive scsi0 (${diskVolume(src)})`);
	const { snapshots: _s, parent: _p, template: _t, lock: _l, startedAt: _a, sshkeys, ...rest } = src;
	const disk = full ? `local-lvm:vm-${newid}-disk-0` : `${diskVolume(src)}/vm-${newid}-disk-0`;
	if (full) out(`transferred ${src.diskGb.toFixed(1)} GiB of ${src.diskGb.toFixed(1)} GiB (100.00%)`);
	save(ctx, {
		...rest,
		...(sshkeys ? { sshkeys } : {}),
		vmid: newid,
		name,
		status: 'stopped',
		disk,
		net0: `virtio=${hwaddrFor(newid)},bridge=${/bridge=([^,]+)/.exec(src.net0 ?? '')?.[1] ?? 'vmbr0'}`,
		...(src.ide2 ? { ide2: `local-lvm:vm-${newid}-cloudinit,media=cdrom` } : {})
	});
}

function template(ctx, vm) {
	checkLock(vm);
	if (vm.template) fail(`VM ${vm.vmid} is already a template`);
	if (vm.status === 'running') fail("you can't convert a VM to template if VM is running");
	out(`  Renamed "vm-${vm.vmid}-disk-0" to "base-${vm.vmid}-disk-0" in volume group "pve"`);
	save(ctx, { ...vm, template: 1, disk: diskVolume(vm).replace(`vm-${vm.vmid}-disk-0`, `base-${vm.vmid}-disk-0`) });
}

const SETTABLE = new Set(['cores', 'memory', 'balloon', 'onboot', 'tags', 'description', 'name', 'ciuser', 'ipconfig0', 'agent']);

function set(ctx, vm, args) {
	const { opts } = parseOpts(args, new Set(['onboot']));
	checkLock(vm);
	const bad = [...opts.keys()].filter((k) => !SETTABLE.has(k));
	if (bad.length)
		paramFail(
			'qm set <vmid> [OPTIONS]',
			bad.map((k) => `${k}: property is not defined in schema and the schema does not allow additional properties`)
		);
	const next = { ...vm };
	for (const [k, v] of opts) {
		if (['cores', 'memory', 'balloon', 'onboot'].includes(k)) {
			if (!/^\d+$/.test(v)) paramFail('qm set <vmid> [OPTIONS]', [`${k}: type check ('integer') failed - got '${v}'`]);
			next[k] = Number(v);
		} else next[k] = v;
	}
	if (next.balloon !== undefined && next.balloon > next.memory) fail(`balloon value too large (must be smaller than assigned memory)`);
	save(ctx, next);
}

function resize(ctx, vm, disk, size) {
	const usage = 'qm resize <vmid> <disk> <size> [OPTIONS]';
	if (!disk || !size) fail(`400 not enough arguments\n${usage}`);
	checkLock(vm);
	if (disk !== 'scsi0') fail(`disk '${disk}' does not exist`);
	const current = vm.diskGb;
	const next = resizedGb(current, size, usage);
	if (next < current) fail('shrinking disks is not supported');
	if (next === current) return;
	const lv = `pve/vm-${vm.vmid}-disk-0`;
	const g = (x) => `${x.toFixed(2)} GiB (${Math.round(x * 256)} extents)`;
	out(`  Size of logical volume ${lv} changed from ${g(current)} to ${g(next)}.`);
	out(`  Logical volume ${lv} successfully resized.`);
	save(ctx, { ...vm, diskGb: next });
}

// ---- snapshots ------------------------------------------------------------------

const SNAP_FIELDS = ['cores', 'memory', 'balloon', 'onboot', 'description', 'name', 'tags', 'diskGb', 'ciuser', 'ipconfig0', 'agent'];

function snapshot(ctx, vm, name, args) {
	if (!name) fail('400 not enough arguments\nqm snapshot <vmid> <snapname> [OPTIONS]');
	const { opts } = parseOpts(args, new Set(['vmstate']));
	checkLock(vm);
	if (!diskVolume(vm).startsWith('local-lvm:')) fail('snapshot feature is not available');
	const snaps = addSnapshot(vm, name, SNAP_FIELDS, opts.get('description'));
	out(`  Logical volume "snap_vm-${vm.vmid}-disk-0_${name}" created.`);
	save(ctx, withSnapshots(vm, snaps));
}

function rollback(ctx, vm, name, args) {
	if (!name) fail('400 not enough arguments\nqm rollback <vmid> <snapname> [OPTIONS]');
	const { opts } = parseOpts(args, new Set(['start']));
	checkLock(vm);
	const snap = vm.snapshots?.[name];
	if (!snap) fail(`snapshot '${name}' does not exist`);
	const { startedAt: _t, parent: _p, ...rest } = vm;
	for (const k of SNAP_FIELDS) delete rest[k];
	out(`  Logical volume "vm-${vm.vmid}-disk-0" successfully removed.`);
	out(`  Logical volume "vm-${vm.vmid}-disk-0" created.`);
	const start = truthy(opts.get('start'));
	save(ctx, { ...rest, ...snap.conf, status: start ? 'running' : 'stopped', ...(start ? { startedAt: Date.now() } : {}), parent: name });
}

function delsnapshot(ctx, vm, name) {
	if (!name) fail('400 not enough arguments\nqm delsnapshot <vmid> <snapname> [OPTIONS]');
	checkLock(vm);
	const snaps = dropSnapshot(vm, name);
	out(`  Logical volume "snap_vm-${vm.vmid}-disk-0_${name}" successfully removed.`);
	save(ctx, withSnapshots(vm, snaps));
}

// ---- power and the guest agent ------------------------------------------------------

async function shutdown(ctx, vm, args, reboot) {
	const { opts } = parseOpts(args, new Set(['forceStop', 'keepActive', 'skiplock']));
	checkLock(vm);
	if (vm.status !== 'running') fail(`VM ${vm.vmid} not running`);
	// A guest that ignores ACPI (no acpid, a hung OS) never powers off: qm waits out the timeout.
	if (vm.ignoresAcpi) {
		const timeout = Number(opts.get('timeout') ?? 180);
		await sleep(timeout * 1000);
		if (!truthy(opts.get('forceStop'))) fail(reboot ? 'VM quit/powerdown failed' : 'VM quit/powerdown failed - got timeout');
	}
	const { startedAt: _t, ...rest } = vm;
	save(ctx, reboot ? { ...rest, status: 'running', startedAt: Date.now() } : { ...rest, status: 'stopped' });
}

function destroy(ctx, vm) {
	checkLock(vm);
	if (vm.status === 'running') fail(`VM ${vm.vmid} is running - destroy failed`);
	out(`  Logical volume "${vm.template ? 'base' : 'vm'}-${vm.vmid}-disk-0" successfully removed.`);
	if (vm.ide2) out(`  Logical volume "vm-${vm.vmid}-cloudinit" successfully removed.`);
	out(`purging VM ${vm.vmid} from related configurations..`);
	rmSync(vmFile(ctx, vm.vmid), { force: true });
}

/** The address cloud-init gave the guest: its static ipconfig0, else a DHCP lease derived from the vmid. */
export function guestIp(vm) {
	const m = /(?:^|,)ip=(\d+\.\d+\.\d+\.\d+)\/(\d+)/.exec(vm.ipconfig0 ?? '');
	return m ? { ip: m[1], prefix: Number(m[2]) } : { ip: `192.168.1.${100 + (vm.vmid % 150)}`, prefix: 24 };
}

/** What the agent reports for eth0: a test's `agentAddresses` verbatim (any string, hostile ones too), else the cloud-init address. */
export function agentAddresses(vm) {
	if (Array.isArray(vm.agentAddresses)) {
		return vm.agentAddresses.map((a) => ({
			'ip-address': a,
			'ip-address-type': String(a).includes(':') ? 'ipv6' : 'ipv4',
			prefix: String(a).includes(':') ? 64 : 24
		}));
	}
	const { ip, prefix } = guestIp(vm);
	return [{ 'ip-address': ip, 'ip-address-type': 'ipv4', prefix }];
}

function guest(ctx, vm, rest) {
	const [sub, id, command] = rest;
	if (sub !== 'cmd') fail(`ERROR: unknown command 'qm guest ${sub ?? ''}'\nUSAGE: qm guest <COMMAND> [ARGS] [OPTIONS]`);
	if (!command) fail('400 not enough arguments\nqm guest cmd <vmid> <command>');
	const known = [
		'fsfreeze-freeze',
		'fsfreeze-status',
		'fsfreeze-thaw',
		'fstrim',
		'get-fsinfo',
		'get-host-name',
		'get-memory-block-info',
		'get-memory-blocks',
		'get-osinfo',
		'get-time',
		'get-timezone',
		'get-users',
		'get-vcpus',
		'info',
		'network-get-interfaces',
		'ping',
		'shutdown',
		'suspend-disk',
		'suspend-hybrid',
		'suspend-ram'
	];
	if (!known.includes(command))
		paramFail('qm guest cmd <vmid> <command>', [`command: value '${command}' does not have a value in the enumeration '${known.join(', ')}'`]);
	if (vm.status !== 'running') fail(`VM ${id} is not running`);
	if (!/^(1|enabled=1)/.test(String(vm.agent ?? ''))) fail('No QEMU guest agent configured');
	if (vm.agentDown) fail('QEMU guest agent is not running');
	if (command === 'ping') return;
	if (command !== 'network-get-interfaces') fail(`this double answers only ping and network-get-interfaces`);
	// Counted down per read: "no lease for the first N reads" (agentPending).
	const pending = vm.agentPending && vm.agentPending.reads > 0 ? vm.agentPending : null;
	if (pending) save(ctx, { ...vm, agentPending: { ...pending, reads: pending.reads - 1 } });
	const hw = hwaddrFor(vm.vmid).toLowerCase();
	// EUI-64 from the MAC, as the guest's kernel forms it before any lease.
	const b = hw.split(':');
	const linkLocal = `fe80::${(parseInt(b[0], 16) ^ 2).toString(16).padStart(2, '0')}${b[1]}:${b[2]}ff:fe${b[3]}:${b[4]}${b[5]}`.replace(
		/:0+(?=[0-9a-f])/g,
		':'
	);
	const ifaces = [
		{
			name: 'lo',
			'hardware-address': '00:00:00:00:00:00',
			'ip-addresses': [
				{ 'ip-address': '127.0.0.1', 'ip-address-type': 'ipv4', prefix: 8 },
				{ 'ip-address': '::1', 'ip-address-type': 'ipv6', prefix: 128 }
			]
		},
		{
			name: 'eth0',
			'hardware-address': hw,
			'ip-addresses': pending ? agentAddresses({ agentAddresses: pending.addresses ?? [linkLocal] }) : agentAddresses(vm)
		}
	];
	out(JSON.stringify(ifaces, null, 3));
}

const COMMANDS = [
	'status',
	'config',
	'start',
	'stop',
	'shutdown',
	'reboot',
	'clone',
	'template',
	'set',
	'resize',
	'snapshot',
	'rollback',
	'delsnapshot',
	'listsnapshot',
	'destroy',
	'unlock',
	'guest'
];

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export async function qm(ctx, args) {
	const [cmd, ...rest] = args;
	if (cmd === 'list') return list(ctx);
	if (cmd === 'create') return create(ctx, rest);
	if (cmd === 'migrate') return migrate(ctx, 'qemu', rest);
	if (!COMMANDS.includes(cmd ?? '')) fail(`ERROR: unknown command 'qm${cmd ? ` ${cmd}` : ''}'\nUSAGE: qm <COMMAND> [ARGS] [OPTIONS]`);
	const id = cmd === 'guest' ? rest[1] : rest[0];
	const vm = loadVm(ctx, parseVmid(id, `qm ${cmd} <vmid> [OPTIONS]`));
	const after = rest.slice(cmd === 'guest' ? 2 : 1);
	switch (cmd) {
		case 'status':
			return status(vm, truthy(parseOpts(after, new Set(['verbose'])).opts.get('verbose')));
		case 'config': {
			const c = configOf(vm);
			for (const k of Object.keys(c).sort()) out(`${k}: ${c[k]}`);
			return;
		}
		case 'start':
			checkLock(vm);
			if (vm.template) fail("you can't start a vm if it's a template");
			if (vm.status === 'running') fail(`VM ${vm.vmid} already running`);
			return save(ctx, { ...vm, status: 'running', startedAt: Date.now() });
		case 'stop': {
			checkLock(vm);
			// Stopping a stopped VM is a silent no-op in PVE.
			const { startedAt: _t, ...stopped } = vm;
			return save(ctx, { ...stopped, status: 'stopped' });
		}
		case 'shutdown':
			return shutdown(ctx, vm, after, false);
		case 'reboot':
			return shutdown(ctx, vm, after, true);
		case 'clone':
			return clone(ctx, vm, after);
		case 'template':
			return template(ctx, vm);
		case 'set':
			return set(ctx, vm, after);
		case 'resize':
			return resize(ctx, vm, after[0], after[1]);
		case 'snapshot':
			return snapshot(ctx, vm, after[0], after.slice(1));
		case 'rollback':
			return rollback(ctx, vm, after[0], after.slice(1));
		case 'delsnapshot':
			return delsnapshot(ctx, vm, after[0]);
		case 'listsnapshot':
			return printSnapshots(vm);
		case 'destroy':
			return destroy(ctx, vm);
		case 'unlock': {
			const { lock: _l, ...unlocked } = vm;
			return save(ctx, unlocked);
		}
		case 'guest':
			return guest(ctx, vm, rest);
	}
}
