// Fake `systemctl` with per-scope (host or guest) unit state in units.json.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { err, fail, out, readJson, writeJson } from './common.mjs';
import { journalAppend } from './journalctl.mjs';

/** @typedef {{ description: string, active: boolean, enabled: boolean, since: number, pid: number }} Unit */

const HOST_UNITS = {
	'pve-cluster': 'The Proxmox VE cluster filesystem',
	pvedaemon: 'PVE API Daemon',
	pveproxy: 'PVE API Proxy Server',
	pvestatd: 'PVE Status Daemon',
	'pve-firewall': 'Proxmox VE firewall',
	ssh: 'OpenBSD Secure Shell server',
	cron: 'Regular background program processing daemon',
	chrony: 'chrony, an NTP client/server'
};
const GUEST_UNITS = {
	ssh: 'OpenBSD Secure Shell server',
	cron: 'Regular background program processing daemon',
	postfix: 'Postfix Mail Transport Agent',
	'systemd-networkd': 'Network Configuration'
};

/** Services that `apt-get install` registers (enabled + started, like Debian does). */
export const PACKAGE_UNITS = {
	caddy: 'Caddy',
	nginx: 'A high performance web server and a reverse proxy server',
	apache2: 'The Apache HTTP Server',
	postgresql: 'PostgreSQL RDBMS',
	'redis-server': 'Advanced key-value store',
	'mariadb-server': 'MariaDB database server',
	'docker.io': 'Docker Application Container Engine'
};

const unitName = (u) => (/\.(service|socket|timer|target|mount|path)$/.test(u) ? u : `${u}.service`);
const baseName = (u) => unitName(u).replace(/\.service$/, '');
const BOOT = Date.parse('2025-01-06T08:14:03Z');

function pidFor(name) {
	let h = 7;
	for (const c of name) h = (h * 31 + c.charCodeAt(0)) % 60000;
	return 600 + h;
}

/** @param {import('./common.mjs').Ctx} ctx @returns {Record<string, Unit>} */
export function loadUnits(ctx) {
	const file = join(ctx.scopeDir, 'units.json');
	const stored = readJson(file, undefined);
	const defaults = ctx.ct === undefined ? HOST_UNITS : GUEST_UNITS;
	const units =
		stored ?? Object.fromEntries(Object.entries(defaults).map(([n, d]) => [n, { description: d, active: true, enabled: true, since: BOOT, pid: pidFor(n) }]));
	// Like systemd, a unit file written into /etc/systemd/system is loaded on demand (inactive, disabled).
	const dir = join(ctx.scopeDir, 'rootfs', 'etc', 'systemd', 'system');
	if (ctx.ct !== undefined && existsSync(dir)) {
		for (const f of readdirSync(dir).filter((f) => f.endsWith('.service'))) {
			const name = f.replace(/\.service$/, '');
			if (units[name]) continue;
			const description = /^Description=(.*)$/m.exec(readFileSync(join(dir, f), 'utf8'))?.[1] ?? name;
			units[name] = { description, active: false, enabled: false, since: BOOT, pid: pidFor(name) };
		}
	}
	return units;
}

export function saveUnits(ctx, units) {
	writeJson(join(ctx.scopeDir, 'units.json'), units);
}

export function addUnit(units, pkg) {
	const name = pkg === 'docker.io' ? 'docker' : pkg;
	units[name] = { description: PACKAGE_UNITS[pkg], active: true, enabled: true, since: Date.now(), pid: pidFor(name) };
}

function ago(ms) {
	const s = Math.max(0, Math.floor(ms / 1000));
	const d = Math.floor(s / 86400),
		h = Math.floor((s % 86400) / 3600),
		m = Math.floor((s % 3600) / 60);
	if (d) return `${d} day${d > 1 ? 's' : ''} ${h}h ago`;
	if (h) return `${h}h ${m}min ago`;
	if (m) return `${m}min ${s % 60}s ago`;
	return `${s}s ago`;
}

function stamp(ms) {
	const d = new Date(ms);
	const day = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][d.getUTCDay()];
	return `${day} ${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function status(name, u) {
	const full = unitName(name);
	const lines = [
		`${u.active ? '●' : '○'} ${full} - ${u.description}`,
		`     Loaded: loaded (/lib/systemd/system/${full}; ${u.enabled ? 'enabled' : 'disabled'}; preset: enabled)`,
		u.active ? `     Active: active (running) since ${stamp(u.since)}; ${ago(Date.now() - u.since)}` : '     Active: inactive (dead)'
	];
	if (u.active) {
		lines.push(
			`   Main PID: ${u.pid} (${baseName(name)})`,
			'      Tasks: 3 (limit: 38293)',
			'     Memory: 12.4M',
			'        CPU: 1.204s',
			`     CGroup: /system.slice/${full}`,
			`             └─${u.pid} /usr/bin/${baseName(name)}`
		);
	}
	out(lines.join('\n'));
	return u.active ? 0 : 3;
}

const VERBS = ['start', 'stop', 'restart', 'reload', 'enable', 'disable', 'is-active', 'is-enabled', 'status', 'daemon-reload'];

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args @returns {number | void} */
export function systemctl(ctx, args) {
	const flags = new Set(args.filter((a) => a.startsWith('-')));
	const [verb, ...names] = args.filter((a) => !a.startsWith('-'));
	if (!verb || !VERBS.includes(verb)) fail(`Unknown command verb '${verb ?? ''}'.`, 1);
	if (verb === 'daemon-reload') return;
	if (!names.length) fail(`Too few arguments.`, 1);
	const units = loadUnits(ctx);
	let code = 0;
	for (const raw of names) {
		const name = baseName(raw);
		const u = units[name];
		const full = unitName(raw);
		if (verb === 'is-active') {
			out(u?.active ? 'active' : 'inactive');
			if (!u?.active) code = 3;
			continue;
		}
		if (!u) {
			const msg = {
				status: [`Unit ${full} could not be found.`, 4],
				'is-enabled': [`Failed to get unit file state for ${full}: No such file or directory`, 1],
				enable: [`Failed to enable unit: Unit file ${full} does not exist.`, 1],
				disable: [`Failed to disable unit: Unit file ${full} does not exist.`, 1],
				stop: [`Failed to stop ${full}: Unit ${full} not loaded.`, 5]
			}[verb] ?? [`Failed to ${verb} ${full}: Unit ${full} not found.`, 5];
			err(String(msg[0]));
			code = Number(msg[1]);
			continue;
		}
		if (verb === 'status') code = Math.max(code, status(raw, u));
		else if (verb === 'is-enabled') {
			out(u.enabled ? 'enabled' : 'disabled');
			if (!u.enabled) code = 1;
		} else if (verb === 'enable' || verb === 'disable') {
			const on = verb === 'enable';
			if (u.enabled !== on) {
				const link = `/etc/systemd/system/multi-user.target.wants/${full}`;
				err(on ? `Created symlink ${link} → /lib/systemd/system/${full}.` : `Removed "${link}".`);
			}
			u.enabled = on;
			if (flags.has('--now')) Object.assign(u, on ? { active: true, since: Date.now() } : { active: false });
		} else if (verb === 'stop') {
			if (u.active)
				journalAppend(ctx, name, 'systemd[1]', [
					`Stopping ${full} - ${u.description}...`,
					`${full}: Deactivated successfully.`,
					`Stopped ${full} - ${u.description}.`
				]);
			u.active = false;
		} else if (verb === 'reload' && !u.active) {
			err(`Failed to reload ${full}: Unit ${full} cannot be reloaded because it is inactive.`);
			code = 1;
		} else if (verb !== 'reload') {
			// As systemd logs it: a restart of a running unit stops it first; starting a running one does nothing.
			if (verb === 'restart' && u.active)
				journalAppend(ctx, name, 'systemd[1]', [`Stopping ${full} - ${u.description}...`, `Stopped ${full} - ${u.description}.`]);
			if (verb === 'restart' || !u.active)
				journalAppend(ctx, name, 'systemd[1]', [`Starting ${full} - ${u.description}...`, `Started ${full} - ${u.description}.`]);
			Object.assign(u, { active: true, since: u.active && verb === 'start' ? u.since : Date.now() });
		}
	}
	saveUnits(ctx, units);
	return code;
}
