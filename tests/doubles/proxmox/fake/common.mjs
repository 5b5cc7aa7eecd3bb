// Shared plumbing for the fake Proxmox binaries: context, logging, state files, CLI parsing.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Thrown to end the process with a message on stderr and an exit code. */
export class Exit extends Error {
	/** @param {number} code @param {string} [message] */
	constructor(code, message = '') {
		super(message);
		this.code = code;
	}
}

/** @param {string} message @param {number} [code] @returns {never} */
export function fail(message, code = 255) {
	throw new Exit(code, message);
}

/**
 * @typedef {{ state: string, node: string, delayMs: number, ct: number | undefined, scopeDir: string }} Ctx
 * scopeDir is where systemctl/apt-get keep their state: the host's state dir, or the guest dir inside `pct exec`.
 */

/** @returns {Ctx} */
export function context() {
	const state = process.env.PVE_DOUBLE_STATE;
	if (!state) fail('PVE_DOUBLE_STATE is not set', 1);
	const ct = process.env.PVE_DOUBLE_CT;
	const delay = Number(process.env.PVE_DOUBLE_DELAY_MS ?? '50');
	return {
		state,
		node: process.env.PVE_DOUBLE_NODE || 'strong',
		delayMs: Number.isFinite(delay) && delay >= 0 ? delay : 50,
		ct: ct ? Number(ct) : undefined,
		scopeDir: ct ? guestDir(state, Number(ct)) : state
	};
}

/** @param {string} state @param {number} vmid */
export function guestDir(state, vmid) {
	return join(state, 'guests', String(vmid));
}

/** One write(2) on an O_APPEND fd, so concurrent invocations never interleave a line. */
export function appendLine(path, line) {
	mkdirSync(dirname(path), { recursive: true });
	const fd = openSync(path, 'a');
	try {
		writeSync(fd, Buffer.from(line.endsWith('\n') ? line : line + '\n'));
	} finally {
		closeSync(fd);
	}
}

/** @param {Ctx} ctx @param {string[]} argv */
export function logArgv(ctx, argv) {
	appendLine(join(ctx.state, 'argv.log'), JSON.stringify(argv));
}

export function readJson(path, fallback) {
	try {
		return JSON.parse(readFileSync(path, 'utf8'));
	} catch (e) {
		// Gone, or removed between a listing and this read by a concurrent command (pct destroy).
		if (e && e.code === 'ENOENT') return fallback;
		throw e;
	}
}

/** Write via temp file + rename so readers never see a half-written file. */
export function writeJson(path, value) {
	mkdirSync(dirname(path), { recursive: true });
	const tmp = `${path}.${process.pid}.tmp`;
	const fd = openSync(tmp, 'w');
	try {
		writeSync(fd, JSON.stringify(value, null, 2) + '\n');
	} finally {
		closeSync(fd);
	}
	renameSync(tmp, path);
}

/** Write one line (a newline is always appended). */
export const out = (/** @type {string} */ s) => process.stdout.write(s + '\n');
export const err = (/** @type {string} */ s) => process.stderr.write(s + '\n');
export const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** @param {Ctx} ctx */
export function readFaults(ctx) {
	return readJson(join(ctx.state, 'faults.json'), {});
}

/**
 * The `quiet` fault: a matching invocation "succeeds" (exit 0) although its work failed, as
 * `pveam download` and `pct push` do when their task fails. Returns whether it applies.
 * @param {Ctx} ctx @param {string} tool @param {string[]} argv
 */
export function quietFault(ctx, tool, argv) {
	const q = readFaults(ctx).quiet;
	return !!q && q.tool === tool && (!q.match || argv.join(' ').includes(q.match));
}

/** Record our pid (so tests can check it was killed) and block until a signal ends us. */
export function hangForever(ctx, tool) {
	appendLine(join(ctx.state, 'hangs.log'), JSON.stringify({ pid: process.pid, tool }));
	setInterval(() => {}, 1 << 30);
	return new Promise(() => {});
}

// ---- containers -----------------------------------------------------------

const ctFile = (ctx, vmid) => join(ctx.state, 'cts', `${vmid}.json`);

export function ctExists(ctx, vmid) {
	return existsSync(ctFile(ctx, vmid));
}

/** VMs share the id space with containers. */
export function vmExists(ctx, vmid) {
	return existsSync(join(ctx.state, 'vms', `${vmid}.json`));
}

export function loadCt(ctx, vmid) {
	const ct = readJson(ctFile(ctx, vmid), undefined);
	if (!ct) fail(`Configuration file 'nodes/${ctx.node}/lxc/${vmid}.conf' does not exist`, 2);
	return ct;
}

export function saveCt(ctx, ct) {
	writeJson(ctFile(ctx, ct.vmid), ct);
}

/** Atomically claim a vmid (O_EXCL). Returns false if it is taken. */
export function reserveCt(ctx, ct) {
	mkdirSync(join(ctx.state, 'cts'), { recursive: true });
	try {
		const fd = openSync(ctFile(ctx, ct.vmid), 'wx');
		writeSync(fd, JSON.stringify(ct, null, 2) + '\n');
		closeSync(fd);
		return true;
	} catch (e) {
		if (/** @type {NodeJS.ErrnoException} */ (e).code === 'EEXIST') return false;
		throw e;
	}
}

export function deleteCt(ctx, vmid) {
	rmSync(ctFile(ctx, vmid), { force: true });
	rmSync(guestDir(ctx.state, vmid), { recursive: true, force: true });
}

export const listCts = (ctx) => listGuests(ctx, 'cts');

/** Deterministic MAC in Proxmox's BC:24:11 range. */
export function hwaddrFor(vmid) {
	const h = (Math.imul(vmid, 2654435761) >>> 0).toString(16).padStart(8, '0').toUpperCase();
	return `BC:24:11:${h.slice(0, 2)}:${h.slice(2, 4)}:${h.slice(4, 6)}`;
}

export function diskGb(ct) {
	const m = /size=(\d+(?:\.\d+)?)G/.exec(ct.rootfs ?? '');
	return m ? Number(m[1]) : 8;
}

// ---- PVE-style CLI parsing --------------------------------------------------

/** @param {string} usage @param {string[]} lines */
export function paramFail(usage, lines) {
	fail(['400 Parameter verification failed.', ...lines, usage].join('\n'));
}

/** @param {string | undefined} raw @param {string} usage @returns {number} */
export function parseVmid(raw, usage) {
	if (raw === undefined) fail(`400 not enough arguments\n${usage}`);
	if (!/^\d+$/.test(raw)) paramFail(usage, [`vmid: type check ('integer') failed - got '${raw}'`]);
	const n = Number(raw);
	if (n < 100) paramFail(usage, ['vmid: value must have a minimum value of 100']);
	if (n > 999999999) paramFail(usage, ['vmid: value must have a maximum value of 999999999']);
	return n;
}

const BOOL_WORDS = new Set(['0', '1', 'true', 'false', 'yes', 'no', 'on', 'off']);

/**
 * Parse `--opt value`, `-opt value`, `--opt=value`; boolean options may omit the value.
 * Everything after a bare `--` is returned untouched in `extra`.
 * @param {string[]} args @param {Set<string>} [booleans]
 */
export function parseOpts(args, booleans = new Set()) {
	/** @type {string[]} */ const positional = [];
	/** @type {Map<string, string>} */ const opts = new Map();
	/** @type {string[] | undefined} */ let extra;
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		if (a === '--') {
			extra = args.slice(i + 1);
			break;
		}
		const m = /^--?([a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(a);
		if (!m) {
			positional.push(a);
			continue;
		}
		const [, name, inline] = m;
		if (inline !== undefined) opts.set(name, inline);
		else if (booleans.has(name)) {
			const next = args[i + 1];
			if (next !== undefined && BOOL_WORDS.has(next)) {
				opts.set(name, next);
				i++;
			} else opts.set(name, '1');
		} else {
			if (i + 1 >= args.length) fail(`option '${name}' requires an argument`);
			opts.set(name, args[++i]);
		}
	}
	return { positional, opts, extra };
}

export const truthy = (/** @type {string | undefined} */ v) => v !== undefined && ['1', 'true', 'yes', 'on'].includes(v);

// ---- guests: what pct and qm do alike ---------------------------------------

/** The guests stored as `<dir>/<vmid>.json` (cts/ or vms/), by vmid. */
export function listGuests(ctx, dir) {
	const path = join(ctx.state, dir);
	if (!existsSync(path)) return [];
	return readdirSync(path)
		.filter((f) => /^\d+\.json$/.test(f))
		.map((f) => readJson(join(path, f), undefined))
		.filter(Boolean)
		.sort((a, b) => a.vmid - b.vmid);
}

/** @param {{ lock?: string }} guest @param {'CT' | 'VM'} kind */
export function checkLock(guest, kind) {
	if (guest.lock) fail(`${kind} is locked (${guest.lock})`);
}

const lastSnapshot = (snaps) =>
	Object.entries(snaps)
		.sort((a, b) => a[1].snaptime - b[1].snaptime)
		.pop()?.[0];

/** The guest with `snaps` as its snapshots and the newest one as its parent (neither key when there are none). */
export function withSnapshots(guest, snaps) {
	const { parent: _p, snapshots: _s, ...rest } = guest;
	const parent = lastSnapshot(snaps);
	return Object.keys(snaps).length ? { ...rest, ...(parent ? { parent } : {}), snapshots: snaps } : rest;
}

/** The guest's snapshots with a new one keeping `fields` of its config; fails on a name in use. */
export function addSnapshot(guest, name, fields, description) {
	const snaps = { ...(guest.snapshots ?? {}) };
	if (snaps[name]) fail(`snapshot name '${name}' already used`);
	const conf = Object.fromEntries(fields.filter((k) => guest[k] !== undefined).map((k) => [k, guest[k]]));
	snaps[name] = { snaptime: Math.floor(Date.now() / 1000), description: description ?? '', conf };
	return snaps;
}

/** The guest's snapshots without `name`; fails when there is none of that name. */
export function dropSnapshot(guest, name) {
	const snaps = { ...(guest.snapshots ?? {}) };
	if (!snaps[name]) fail(`snapshot '${name}' does not exist`);
	delete snaps[name];
	return snaps;
}

/** `listsnapshot`: the snapshots as a tree, oldest first, then `current`. */
export function printSnapshots(guest) {
	const snaps = Object.entries(guest.snapshots ?? {}).sort((a, b) => a[1].snaptime - b[1].snaptime);
	let indent = '';
	for (const [name, s] of snaps) {
		const when = new Date(s.snaptime * 1000).toISOString().replace('T', ' ').slice(0, 19);
		out(`${indent}\`-> ${name.padEnd(24)} ${when}     ${s.description || 'no-description'}`);
		indent += ' ';
	}
	out(`${indent}\`-> current${' '.repeat(41)}You are here!`);
}

const UNIT_GIB = { K: 1 / 1024 ** 2, M: 1 / 1024, G: 1, T: 1024 };

/** The disk size in GiB after `resize <size>` (`+2G` grows by, `16G` is the total; no unit is bytes, as in the real tools). */
export function resizedGb(current, size, usage) {
	const m = /^(\+?)(\d+(?:\.\d+)?)([KMGT]?)$/.exec(size);
	if (!m) paramFail(usage, ['size: value does not match the regex pattern']);
	const amount = Number(m[2]) * (m[3] ? UNIT_GIB[m[3]] : 1 / 1024 ** 3);
	return m[1] ? current + amount : amount;
}
