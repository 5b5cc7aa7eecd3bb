// Fake `pveam` (the appliance manager): update, available, list <storage>, download <storage> <template>.
import { join } from 'node:path';
import { fail, out, parseOpts, quietFault, readJson, sleep, writeJson } from './common.mjs';
import { DEFAULT_TEMPLATES, templates } from './model.mjs';

/** What `pveam available` offers after `pveam update` (section, file name), as on download.proxmox.com. */
export const AVAILABLE = [
	['system', 'alma-9-default_20240911_amd64.tar.xz'],
	['system', 'alpine-3.20-default_20240908_amd64.tar.xz'],
	['system', 'archlinux-base_20240911-1_amd64.tar.zst'],
	['system', 'debian-11-standard_11.7-1_amd64.tar.zst'],
	['system', 'debian-12-standard_12.7-1_amd64.tar.zst'],
	['system', 'fedora-40-default_20240909_amd64.tar.xz'],
	['system', 'rockylinux-9-default_20240912_amd64.tar.xz'],
	['system', 'ubuntu-22.04-standard_22.04-1_amd64.tar.zst'],
	['system', 'ubuntu-24.04-standard_24.04-2_amd64.tar.zst'],
	['turnkeylinux', 'debian-12-turnkey-nextcloud_18.0-1_amd64.tar.gz'],
	['turnkeylinux', 'debian-12-turnkey-wordpress_18.1-1_amd64.tar.gz']
];
const TEMPLATE_STORAGES = new Set(['local']);
const KNOWN_STORAGES = new Set(['local', 'local-lvm']);
const size = (name) => 110_000_000 + [...name].reduce((a, c) => (a * 31 + c.charCodeAt(0)) % 90_000_000, 7);

function checkStorage(storage, usage) {
	if (!storage) fail(`400 not enough arguments\n${usage}`);
	if (!KNOWN_STORAGES.has(storage)) fail(`storage '${storage}' does not exist`);
	if (!TEMPLATE_STORAGES.has(storage)) fail(`storage '${storage}' does not support templates`);
}

function list(ctx, storage) {
	checkStorage(storage, 'pveam list <storage> [OPTIONS]');
	const rows = templates(ctx)
		.filter((v) => v.startsWith(`${storage}:vztmpl/`))
		.sort();
	if (!rows.length) return;
	out(`${'NAME'.padEnd(60)} ${'SIZE'.padEnd(8)}`);
	for (const v of rows) out(`${v.padEnd(60)} ${(size(v) / 1024 ** 2).toFixed(2)}MB`);
}

async function download(ctx, storage, name, args) {
	checkStorage(storage, 'pveam download <storage> <template> [OPTIONS]');
	if (!name) fail('400 not enough arguments\npveam download <storage> <template> [OPTIONS]');
	const entry = AVAILABLE.find(([, n]) => n === name);
	if (!entry) fail(`400 Parameter verification failed.\ntemplate: no such template\npveam download <storage> <template> [OPTIONS]`);
	const volid = `${storage}:vztmpl/${name}`;
	const path = `/var/lib/vz/template/cache/${name}`;
	if (templates(ctx).includes(volid)) {
		out(`no need to download template, file '${path}' already exists`);
		return;
	}
	const url = `http://download.proxmox.com/images/${entry[0]}/${name}`;
	out(`downloading ${url} to ${path}`);
	out(`--2025-01-06 10:12:41--  ${url}`);
	out('Resolving download.proxmox.com (download.proxmox.com)... 212.224.123.70, 2a0b:25c0:0:1000::70');
	out('Connecting to download.proxmox.com (download.proxmox.com)|212.224.123.70|:80... connected.');
	out('HTTP request sent, awaiting response... 200 OK');
	out(`Length: ${size(name)} (${Math.round(size(name) / 1024 ** 2)}M) [application/octet-stream]`);
	out(`Saving to: '${path}.tmp_dwnl.${process.pid}'`);
	await sleep(ctx.delayMs);
	out(`download of '${url}' to '${path}' finished`);
	if (quietFault(ctx, 'pveam', ['pveam', 'download', ...args])) {
		// The task failed, but the CLI does not check the task's result: exit 0.
		out('calculating checksum...');
		out('TASK ERROR: checksum verification failed: got 3f1c0e5d9a7b2c64, expected 9a2be41f07c3d85e');
		return;
	}
	out('calculating checksum...OK, checksum verified');
	const file = join(ctx.state, 'templates.json');
	writeJson(file, [...readJson(file, DEFAULT_TEMPLATES), volid]);
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export async function pveam(ctx, args) {
	const [cmd, ...rest] = args;
	const { positional, opts } = parseOpts(rest);
	if (cmd === 'update') return out('update successful');
	if (cmd === 'available') {
		const section = opts.get('section');
		for (const [s, n] of AVAILABLE.filter(([s]) => !section || s === section)) out(`${s.padEnd(15)} ${n}`);
		return;
	}
	if (cmd === 'list') return list(ctx, positional[0]);
	if (cmd === 'download') return download(ctx, positional[0], positional[1], rest);
	fail(`ERROR: unknown command 'pveam${cmd ? ` ${cmd}` : ''}'\nUSAGE: pveam <COMMAND> [ARGS] [OPTIONS]`);
}
