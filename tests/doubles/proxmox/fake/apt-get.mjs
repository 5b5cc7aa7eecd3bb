// Fake `apt-get`: update / upgrade / dist-upgrade / full-upgrade / install with Debian-style output.
import { join } from 'node:path';
import { err, fail, out, readJson, sleep, writeJson } from './common.mjs';
import { PACKAGE_UNITS, addUnit, loadUnits, saveUnits } from './systemctl.mjs';
import { loadHealth, refreshApt, saveHealth } from './health.mjs';

/** @typedef {{ name: string, from: string, to: string, size: number, repo: string }} Pending */

const PVE_REPO = 'http://download.proxmox.com/debian/pve bookworm/pve-no-subscription';
const DEB_REPO = 'http://deb.debian.org/debian bookworm/main';
const HOST_PENDING = [
	{ name: 'pve-manager', from: '8.3.2', to: '8.3.3', size: 581_012, repo: PVE_REPO },
	{ name: 'libpve-common-perl', from: '8.2.9', to: '8.3.0', size: 187_344, repo: PVE_REPO },
	{ name: 'proxmox-widget-toolkit', from: '4.3.3', to: '4.3.4', size: 221_780, repo: PVE_REPO }
];
const GUEST_PENDING = [
	{ name: 'openssl', from: '3.0.15-1~deb12u1', to: '3.0.16-1~deb12u1', size: 1_427_000, repo: DEB_REPO },
	{ name: 'tzdata', from: '2024a-0+deb12u1', to: '2025a-0+deb12u1', size: 257_000, repo: DEB_REPO }
];
const CATALOGUE = {
	caddy: '2.6.2-5',
	nginx: '1.22.1-9',
	apache2: '2.4.62-1~deb12u2',
	curl: '7.88.1-10+deb12u8',
	git: '1:2.39.5-0+deb12u1',
	htop: '3.2.2-2',
	vim: '2:9.0.1378-2',
	jq: '1.6-2.1',
	wget: '1.21.3-1+b2',
	sudo: '1.9.13p3-1+deb12u1',
	unzip: '6.0-28',
	'ca-certificates': '20230311',
	postgresql: '15+248',
	'redis-server': '5:7.0.15-1~deb12u1',
	'mariadb-server': '1:10.11.6-0+deb12u1',
	'docker.io': '20.10.24+dfsg1-1+b3'
};

const stateFile = (ctx) => join(ctx.scopeDir, 'apt.json');
/**
 * The scope's apt state. On the host, pending updates a test set in health.json (`apt`, what
 * `/nodes/<n>/apt/update` lists) are the ones dist-upgrade installs, so the API and apt agree.
 */
function load(ctx) {
	const st = readJson(stateFile(ctx), { pending: ctx.ct === undefined ? HOST_PENDING : GUEST_PENDING, installed: {} });
	const listed = ctx.ct === undefined ? loadHealth(ctx).apt : undefined;
	if (!listed) return st;
	const pending = listed.map((p) => ({
		name: p.Package,
		from: p.OldVersion,
		to: p.Version,
		size: 300_000,
		repo: /proxmox/i.test(p.Origin ?? '') ? PVE_REPO : DEB_REPO
	}));
	return { ...st, pending };
}

const kb = (n) => `${Math.max(1, Math.round(n / 1000)).toLocaleString('en-US')} kB`;

async function update(ctx) {
	const lines = [
		'Hit:1 http://deb.debian.org/debian bookworm InRelease',
		'Get:2 http://deb.debian.org/debian bookworm-updates InRelease [55.4 kB]',
		'Get:3 http://security.debian.org/debian-security bookworm-security InRelease [48.0 kB]'
	];
	if (ctx.ct === undefined) lines.push('Hit:4 http://download.proxmox.com/debian/pve bookworm InRelease');
	for (const l of lines) {
		out(l);
		await sleep(ctx.delayMs);
	}
	out('Fetched 103 kB in 1s (142 kB/s)\nReading package lists...');
}

function header() {
	out('Reading package lists...\nBuilding dependency tree...\nReading state information...');
}

/** Print the plan, ask (non-tty => Abort unless -y), then "install" with streamed dpkg lines. */
async function apply(ctx, yes, fresh, upgrades, notUpgraded) {
	const total = [...fresh, ...upgrades].reduce((a, p) => a + p.size, 0);
	if (fresh.length) out(`The following NEW packages will be installed:\n  ${fresh.map((p) => p.name).join(' ')}`);
	if (upgrades.length) out(`The following packages will be upgraded:\n  ${upgrades.map((p) => p.name).join(' ')}`);
	out(`${upgrades.length} upgraded, ${fresh.length} newly installed, 0 to remove and ${notUpgraded} not upgraded.`);
	if (!fresh.length && !upgrades.length) return 0;
	out(`Need to get ${kb(total)} of archives.\nAfter this operation, ${kb(total * 3)} of additional disk space will be used.`);
	if (!yes) {
		out('Do you want to continue? [Y/n] Abort.');
		return 1;
	}
	const all = [...fresh, ...upgrades];
	for (const [i, p] of all.entries()) {
		out(`Get:${i + 1} ${p.repo} amd64 ${p.name} amd64 ${p.to} [${kb(p.size)}]`);
		await sleep(ctx.delayMs);
	}
	out(`Fetched ${kb(total)} in 1s (${kb(total)}/s)`);
	for (const p of fresh) out(`Selecting previously unselected package ${p.name}.`);
	out('(Reading database ... 41297 files and directories currently installed.)');
	for (const p of all) {
		out(`Preparing to unpack .../${p.name}_${p.to}_amd64.deb ...`);
		out(p.from ? `Unpacking ${p.name} (${p.to}) over (${p.from}) ...` : `Unpacking ${p.name} (${p.to}) ...`);
		await sleep(ctx.delayMs);
	}
	for (const p of all) out(`Setting up ${p.name} (${p.to}) ...`);
	out('Processing triggers for man-db (2.11.2-2) ...');
	return 0;
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args @returns {Promise<number | void>} */
export async function aptGet(ctx, args) {
	let yes = false;
	/** @type {string[]} */ const words = [];
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		if (a === '-o') i++;
		else if (a === '--yes' || a === '--assume-yes' || /^-[a-z]*y[a-z]*$/.test(a)) yes = true;
		else if (!a.startsWith('-')) words.push(a);
	}
	const [op, ...pkgs] = words;
	const st = load(ctx);
	if (op === 'update') {
		if (ctx.ct === undefined) refreshApt(ctx);
		return update(ctx);
	}
	if (op === 'upgrade' || op === 'dist-upgrade' || op === 'full-upgrade') {
		header();
		out('Calculating upgrade...');
		const code = await apply(ctx, yes, [], st.pending, 0);
		if (code === 0) {
			writeJson(stateFile(ctx), { ...st, pending: [] });
			const h = ctx.ct === undefined ? loadHealth(ctx) : undefined;
			if (h?.apt) saveHealth(ctx, { ...h, apt: [] });
		}
		return code;
	}
	if (op === 'install') {
		if (!pkgs.length) return header();
		header();
		const missing = pkgs.filter((p) => !(p in CATALOGUE));
		if (missing.length) fail(missing.map((p) => `E: Unable to locate package ${p}`).join('\n'), 100);
		const already = pkgs.filter((p) => st.installed[p]);
		for (const p of already) out(`${p} is already the newest version (${CATALOGUE[p]}).`);
		const fresh = pkgs.filter((p) => !st.installed[p]).map((p) => ({ name: p, from: '', to: CATALOGUE[p], size: 2_400_000, repo: DEB_REPO }));
		const code = await apply(ctx, yes, fresh, [], st.pending.length);
		if (code !== 0) return code;
		const units = loadUnits(ctx);
		for (const p of fresh) {
			st.installed[p.name] = p.to;
			if (p.name in PACKAGE_UNITS) {
				addUnit(units, p.name);
				const unit = p.name === 'docker.io' ? 'docker' : p.name;
				err(`Created symlink /etc/systemd/system/multi-user.target.wants/${unit}.service → /lib/systemd/system/${unit}.service.`);
			}
		}
		saveUnits(ctx, units);
		writeJson(stateFile(ctx), st);
		return 0;
	}
	fail(op ? `E: Invalid operation ${op}` : 'E: No command given', 100);
}
