// Fake `pvesh` — read-only API paths (`get`) with PVE's output formats.
import { fail, listCts, loadCt, out, parseOpts } from './common.mjs';
import { clusterGuests, clusterOf, memberCtx, partitionOf } from './cluster.mjs';
import { lxcCurrent, lxcStatus, nodeEntry, qemuStatus, storages, toJson } from './model.mjs';
import {
	aptUpdates,
	recordTask,
	refreshApt,
	backupJobs,
	disks,
	loadHealth,
	saveHealth,
	services,
	storageContent,
	taskList,
	taskLog,
	taskStatus
} from './health.mjs';
import { parseRetention } from './prune.mjs';

const FORMATS = new Set(['text', 'json', 'json-pretty', 'yaml']);

/** The lowest free id in the whole cluster (pmxcfs's vmlist spans every member). */
function nextId(ctx) {
	const used = new Set(clusterGuests(ctx).map((g) => g.guest.vmid));
	let id = 100;
	while (used.has(id)) id++;
	return String(id);
}

const GiB = 1024 ** 3;

/**
 * GET /nodes/{node}/status: memory, swap, CPU, load and the root filesystem. Memory as PVE 8.4
 * reports it (pve-manager stable-8 PVE/API2/Nodes.pm: `free => $meminfo->{memfree}, total =>
 * $meminfo->{memtotal}, used => $meminfo->{memused}`; pve-common 8.3.1+ src/PVE/ProcFSTools.pm
 * read_meminfo: `$res->{memfree} = $d->{memfree};` and `$res->{memused} = $res->{memtotal} -
 * $d->{memavailable};`): `free` is the kernel's MemFree, below what is available (total - used),
 * the page cache being the difference. Before 8.3.1 free was total - used.
 */
function nodeStatus(ctx) {
	const n = nodeEntry(ctx);
	const available = n.maxmem - n.mem;
	const pageCache = Math.min(available, 2 * GiB);
	const rootfs = { total: n.maxdisk, used: n.disk, avail: n.maxdisk - n.disk, free: n.maxdisk - n.disk };
	return {
		cpu: n.cpu,
		cpuinfo: { cpus: n.maxcpu, cores: n.maxcpu / 2, sockets: 1, model: 'AMD Ryzen 7 5700G with Radeon Graphics', mhz: '3800.000', hvm: '1' },
		kversion: 'Linux 6.8.12-5-pve #1 SMP PREEMPT_DYNAMIC PMX 6.8.12-5 (2024-12-03T10:26Z)',
		loadavg: ['0.12', '0.08', '0.05'],
		memory: { total: n.maxmem, used: n.mem, free: available - pageCache },
		pveversion: 'pve-manager/8.3.2/3e76eec21c4a14a7',
		rootfs,
		swap: { total: 8 * GiB, used: 0, free: 8 * GiB },
		uptime: n.uptime,
		wait: 0.001
	};
}

/**
 * The members as the asking node sees them: `{ member, ctx, up }` (up = in its corosync
 * partition). Without a cluster, just this node.
 */
function membersSeen(ctx) {
	const cluster = clusterOf();
	if (!cluster) return [{ member: { name: ctx.node }, ctx, up: true }];
	const up = new Set(partitionOf(cluster, ctx.node).map((m) => m.name));
	return cluster.nodes.map((m) => ({ member: m, ctx: memberCtx(ctx, m), up: up.has(m.name) }));
}

/**
 * GET /cluster/resources [--type vm|node|storage|sdn], in PVE 8's shape and order (guests, nodes,
 * storage, sdn), checked against pve-manager stable-8 PVE/API2/Cluster.pm (resources) and
 * PVE/API2Tools.pm (extract_vm_stats, extract_node_stats, extract_storage_stats). The figures of a
 * row come from pmxcfs's rrd cache, which drops what a node has not refreshed for 5 minutes
 * (pve-cluster src/pmxcfs/status.c rrd_entry_is_old: `int expire = 60 * 5;`): a member outside
 * this partition is shown as it is 5 minutes after it went away — its node row `{ id, node,
 * status: 'offline', type }`, its guests `{ id, node, status: 'unknown', type, vmid }` (no name,
 * no figures; tags and lock still come from the config), its storages `status: 'unknown'` without
 * disk/maxdisk. (Within those 5 minutes the real thing still shows the last figures and status.)
 */
function resources(ctx, type) {
	const seen = membersSeen(ctx);
	const upNodes = new Set(seen.filter((s) => s.up).map((s) => s.member.name));
	const guests = clusterGuests(ctx).map(({ node, kind, guest }) => {
		const s = kind === 'lxc' ? lxcStatus(guest) : qemuStatus(guest);
		const entry = {
			cpu: s.cpu,
			disk: s.disk,
			diskread: s.diskread,
			diskwrite: s.diskwrite,
			id: `${kind}/${guest.vmid}`,
			maxcpu: s.cpus,
			maxdisk: s.maxdisk,
			maxmem: s.maxmem,
			mem: s.mem,
			name: s.name,
			netin: s.netin,
			netout: s.netout,
			node,
			status: s.status,
			template: guest.template ? 1 : 0,
			type: kind,
			uptime: s.uptime,
			vmid: guest.vmid
		};
		// get_guest_config_properties([qw(lock tags)]): read from the config, whatever the node's state
		const props = { ...(guest.lock ? { lock: guest.lock } : {}), ...(guest.tags ? { tags: guest.tags } : {}) };
		if (!upNodes.has(node)) return { id: entry.id, node, status: 'unknown', type: kind, vmid: guest.vmid, ...props };
		return { ...entry, ...props };
	});
	const nodes = seen.map(({ member, ctx: mctx, up }) => {
		if (!up) return { id: `node/${member.name}`, node: member.name, status: 'offline', type: 'node' };
		const n = nodeEntry(mctx);
		return {
			'cgroup-mode': 2,
			cpu: n.cpu,
			disk: n.disk,
			id: n.id,
			level: '',
			maxcpu: n.maxcpu,
			maxdisk: n.maxdisk,
			maxmem: n.maxmem,
			mem: n.mem,
			node: n.node,
			status: 'online',
			type: 'node',
			uptime: n.uptime
		};
	});
	const storage = seen.flatMap(({ member, ctx: mctx, up }) =>
		storages(mctx).map((st) => ({
			content: st.content,
			...(up ? { disk: st.used } : {}),
			id: `storage/${member.name}/${st.storage}`,
			...(up ? { maxdisk: st.total } : {}),
			node: member.name,
			plugintype: st.type,
			shared: st.shared,
			status: up ? 'available' : 'unknown',
			storage: st.storage,
			type: 'storage'
		}))
	);
	// the default zone is listed for every node with a fixed `status => 'ok'`, up or not
	const sdn = seen.map(({ member }) => ({ id: `sdn/${member.name}/localnetwork`, node: member.name, sdn: 'localnetwork', status: 'ok', type: 'sdn' }));
	const all = [...guests, ...nodes, ...storage, ...sdn];
	if (type === undefined) return all;
	return all.filter((r) => (type === 'vm' ? r.type === 'lxc' || r.type === 'qemu' : r.type === type));
}

function ctConfig(ct) {
	const { vmid: _v, status: _s, startedAt: _t, ostemplate: _o, diskUsedGb: _u, ...conf } = ct;
	return { ...conf, digest: '6f1e0d6ac3b0c0e59b1f4b1d7d2e5c8a9f0b3c21' };
}

/** GET /cluster/backup/{id}: one job (PVE::API2::Backup read_job: "job '<id>' does not exist"). */
function backupJob(ctx, id) {
	const job = backupJobs(ctx).find((j) => j.id === id);
	if (!job) fail(`job '${id}' does not exist`);
	return job;
}

/** PUT /cluster/backup/{id} --prune-backups keep-…: the job's retention, kept as PVE writes it (a property string). */
function setBackupJob(ctx, id, opts) {
	backupJob(ctx, id);
	const retention = opts.get('prune-backups');
	if (retention === undefined) fail('400 Parameter verification failed.\nprune-backups: nothing to set (the double models only the retention)');
	parseRetention(retention);
	const h = loadHealth(ctx);
	saveHealth(ctx, { ...h, jobs: (h.jobs ?? []).map((j) => (j.id === id ? { ...j, 'prune-backups': retention } : j)) });
}

/** Resolve a GET path to its data, or undefined when no handler matches. */
function resolve(ctx, path, opts) {
	if (path === '/cluster/nextid') return nextId(ctx);
	if (path === '/cluster/backup') return backupJobs(ctx);
	const job = /^\/cluster\/backup\/([^/]+)$/.exec(path);
	if (job) return backupJob(ctx, job[1]);
	if (path === '/cluster/resources') {
		const type = opts.get('type');
		if (type !== undefined && !['vm', 'storage', 'node', 'sdn'].includes(type)) {
			fail(`400 Parameter verification failed.\ntype: value '${type}' does not have a value in the enumeration 'vm, storage, node, sdn'`);
		}
		return resources(ctx, type);
	}
	if (path === '/nodes') {
		// PVE/API2/Nodes.pm index: extract_node_stats (an offline node with no rrd data: id, node, status,
		// type) plus `ssl_fingerprint` read from /etc/pve, there for every member
		const fingerprint = (name) =>
			`5A:1F:3C:9E:22:B4:7D:08:61:CA:0E:93:F5:4B:A7:2D:88:16:E0:3F:C9:55:7A:B1:04:6E:D2:98:3B:C1:${name.length.toString(16).padStart(2, '0').toUpperCase()}:20`;
		return membersSeen(ctx).map(({ member, ctx: mctx, up }) =>
			up ? nodeEntry(mctx) : { id: `node/${member.name}`, node: member.name, ssl_fingerprint: fingerprint(member.name), status: 'offline', type: 'node' }
		);
	}
	const m = /^\/nodes\/([^/]+)(\/.*)?$/.exec(path);
	if (!m) return undefined;
	const [, node, sub = ''] = m;
	if (node !== ctx.node && node !== 'localhost') {
		// pvesh proxies a path of another member to that member (over SSH); a member that is down does not answer.
		const other = membersSeen(ctx).find((s) => s.member.name === node);
		if (!other) fail(`hostname lookup '${node}' failed - failed to get address info for: ${node}: Name or service not known`);
		// pve-manager stable-8 PVE/CLI/pvesh.pm proxy_handler: `run_command([ssh…, '--', 'pvesh', …],
		// errmsg => "proxy handler failed", …)`, and run_command dies with "$errmsg: <ssh's last stderr line>".
		if (!other.up) fail(`proxy handler failed: ssh: connect to host ${other.member.ip} port 22: No route to host`);
		return resolve(other.ctx, `/nodes/${node}${sub}`, opts);
	}
	if (sub === '/lxc') return listCts(ctx).map((ct) => lxcStatus(ct));
	if (sub === '/storage') return storages(ctx);
	if (sub === '/status') return nodeStatus(ctx);
	if (sub === '/tasks') return taskList(ctx, opts);
	if (sub === '/apt/update') return aptUpdates(ctx);
	if (sub === '/disks/list') return disks(ctx);
	if (sub === '/services') return services(ctx);
	const content = /^\/storage\/([^/]+)\/content$/.exec(sub);
	if (content)
		return storageContent(
			ctx,
			content[1],
			storages(ctx).map((s) => s.storage),
			opts
		);
	const task = /^\/tasks\/([^/]+)\/(status|log)$/.exec(sub);
	if (task) return task[2] === 'status' ? taskStatus(ctx, task[1]) : taskLog(ctx, task[1], opts);
	const ctm = /^\/lxc\/(\d+)(\/config|\/status\/current)$/.exec(sub);
	if (!ctm) return undefined;
	const ct = loadCt(ctx, Number(ctm[1]));
	return ctm[2] === '/config' ? ctConfig(ct) : lxcCurrent(ct);
}

/**
 * POST paths: the package-list refresh (PVE/API2/APT.pm update_database: a worker `aptupdate` that
 * runs apt-get update; pvesh runs a worker in the foreground, printing its log, then its UPID).
 */
function create(ctx, path) {
	const m = /^\/nodes\/([^/]+)\/apt\/update$/.exec(path);
	if (!m || (m[1] !== ctx.node && m[1] !== 'localhost')) return undefined;
	refreshApt(ctx);
	const log = [
		'starting apt-get update',
		'Hit:1 http://deb.debian.org/debian bookworm InRelease',
		'Hit:2 http://security.debian.org/debian-security bookworm-security InRelease',
		'Hit:3 http://download.proxmox.com/debian/pve bookworm InRelease',
		'Reading package lists...'
	];
	for (const l of log) out(l);
	return recordTask(ctx, 'aptupdate', '', 'OK', [...log, 'TASK OK']);
}

function print(data, format) {
	if (format === 'json') return out(toJson(data));
	if (format === 'json-pretty') return out(toJson(data, true));
	// text: scalars print bare like the real tool; structured data falls back to pretty JSON
	// (the real tool draws a unicode table here; callers should request --output-format json).
	if (typeof data !== 'object' || data === null) return out(String(data));
	return out(toJson(data, true));
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export function pvesh(ctx, args) {
	const { positional, opts } = parseOpts(args, new Set(['noborder', 'noheader', 'human-readable']));
	const [method, rawPath] = positional;
	if (!method || !['get', 'ls', 'create', 'set', 'delete', 'usage'].includes(method)) {
		fail(`ERROR: unknown command 'pvesh${method ? ` ${method}` : ''}'\nUSAGE: pvesh <COMMAND> [ARGS] [OPTIONS]`);
	}
	if (rawPath === undefined) fail(`400 not enough arguments\npvesh ${method} <api_path> [OPTIONS] [FORMAT_OPTIONS]`);
	const format = opts.get('output-format') ?? 'text';
	if (!FORMATS.has(format)) {
		fail(`400 Parameter verification failed.\noutput-format: value '${format}' does not have a value in the enumeration 'text, json, json-pretty, yaml'`);
	}
	const path = ('/' + rawPath.replace(/^\/+|\/+$/g, '')).replace(/\/+/g, '/');
	const jobPath = /^\/cluster\/backup\/([^/]+)$/.exec(path);
	if (method === 'set' && jobPath) return setBackupJob(ctx, jobPath[1], opts);
	const data = method === 'get' ? resolve(ctx, path, opts) : method === 'create' ? create(ctx, path) : undefined;
	// pvesh.pm extract_path_info: `print STDERR "No '$cmd' handler defined for '$path'\n"; exit(1);` (the path as given)
	if (data === undefined) fail(`No '${method}' handler defined for '${rawPath}'`, 1);
	print(data, format);
}
