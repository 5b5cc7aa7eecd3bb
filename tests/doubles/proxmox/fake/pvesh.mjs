// Fake `pvesh` — read-only API paths (`get`) with PVE's output formats.
import { fail, listCts, loadCt, out, parseOpts, vmExists } from './common.mjs';
import { lxcCurrent, lxcStatus, nodeEntry, storages, toJson } from './model.mjs';

const FORMATS = new Set(['text', 'json', 'json-pretty', 'yaml']);

function nextId(ctx) {
	const used = new Set(listCts(ctx).map((c) => c.vmid));
	let id = 100;
	while (used.has(id) || vmExists(ctx, id)) id++;
	return String(id);
}

function ctConfig(ct) {
	const { vmid: _v, status: _s, startedAt: _t, ostemplate: _o, ...conf } = ct;
	return { ...conf, digest: '6f1e0d6ac3b0c0e59b1f4b1d7d2e5c8a9f0b3c21' };
}

/** Resolve a GET path to its data, or undefined when no handler matches. */
function resolve(ctx, path) {
	if (path === '/cluster/nextid') return nextId(ctx);
	if (path === '/nodes') return [nodeEntry(ctx)];
	const m = /^\/nodes\/([^/]+)(\/.*)?$/.exec(path);
	if (!m) return undefined;
	const [, node, sub = ''] = m;
	if (node !== ctx.node && node !== 'localhost') {
		fail(`hostname lookup '${node}' failed - failed to get address info for: ${node}: Name or service not known`);
	}
	if (sub === '/lxc') return listCts(ctx).map((ct) => lxcStatus(ct));
	if (sub === '/storage') return storages(ctx);
	if (sub === '/status') {
		const n = nodeEntry(ctx);
		return { cpu: n.cpu, uptime: n.uptime, memory: { total: n.maxmem, used: n.mem, free: n.maxmem - n.mem }, cpuinfo: { cpus: n.maxcpu, sockets: 1, model: 'AMD Ryzen 7 5700G with Radeon Graphics' }, pveversion: 'pve-manager/8.3.2/3e76eec21c4a14a7', kversion: 'Linux 6.8.12-5-pve #1 SMP PREEMPT_DYNAMIC PMX 6.8.12-5 (2024-12-03T10:26Z)' };
	}
	const ctm = /^\/lxc\/(\d+)(\/config|\/status\/current)$/.exec(sub);
	if (!ctm) return undefined;
	const ct = loadCt(ctx, Number(ctm[1]));
	return ctm[2] === '/config' ? ctConfig(ct) : lxcCurrent(ct);
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
	const data = method === 'get' ? resolve(ctx, path) : undefined;
	if (data === undefined) fail(`No '${method}' handler defined for '${path}'`);
	print(data, format);
}
