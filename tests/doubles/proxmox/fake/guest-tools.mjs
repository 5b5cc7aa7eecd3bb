// `sha256sum` and `curl` as a container sees them: paths and 127.0.0.1 resolve inside the
// guest (its rootfs dir, its http.json and running units). On the host, curl reaches a VM at the
// address its agent reports (its http.json too); anything else runs the real tools.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { err, fail, guestDir, listGuests, out, readJson, sleep, writeJson } from './common.mjs';
import { loadUnits } from './systemctl.mjs';
import { agentAddresses } from './qm.mjs';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin');

function realTool(tool, args) {
	const PATH = (process.env.PATH ?? '')
		.split(':')
		.filter((p) => p && p !== BIN && !p.endsWith('/doubles/proxmox/bin'))
		.join(':');
	const r = spawnSync(tool, args, { stdio: 'inherit', env: { ...process.env, PATH } });
	return r.status ?? 1;
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export function sha256sum(ctx, args) {
	if (ctx.ct === undefined) return realTool('sha256sum', args);
	const files = args.filter((a) => a !== '--');
	let code = 0;
	for (const f of files) {
		const path = join(guestDir(ctx.state, ctx.ct), 'rootfs', f);
		if (!existsSync(path)) {
			err(`sha256sum: ${f}: No such file or directory`);
			code = 1;
			continue;
		}
		const hash = createHash('sha256').update(readFileSync(path)).digest('hex');
		const escaped = /[\\\n]/.test(f);
		out(`${escaped ? '\\' : ''}${hash}  ${escaped ? f.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : f}`);
	}
	return code;
}

/** Ports that known services listen on inside a guest when their unit is active. */
const SERVICE_PORTS = { caddy: 80, nginx: 80, apache2: 80 };

/** The value after a curl option (`--max-time 5`), or undefined. */
const optValue = (args, name) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : undefined;
};

/**
 * curl on the host towards a VM: the URL's host is an address the VM's agent reports (brackets
 * around IPv6). A stopped VM, or a site that hangs, times out at --max-time (exit 28); nothing
 * listening is exit 7; -f with HTTP >= 400 exit 22 — curl 7.88's own messages. Other URLs: the
 * real curl.
 * @param {import('./common.mjs').Ctx} ctx @param {string[]} args
 */
async function curlToVm(ctx, args) {
	const url = args.find((a) => /^https?:\/\//.test(a));
	const m = url && /^https?:\/\/(\[[0-9a-fA-F:.]+\]|[0-9.]+)(?::(\d+))?(\/.*)?$/.exec(url);
	const ip = m ? m[1].replace(/^\[|\]$/g, '') : undefined;
	const vm = ip && listGuests(ctx, 'vms').find((v) => agentAddresses(v).some((a) => a['ip-address'] === ip));
	if (!vm) return realTool('curl', args);
	const port = Number(m[2] ?? (url.startsWith('https') ? 443 : 80));
	const path = m[3] ?? '/';
	const maxTime = Number(optValue(args, '--max-time') ?? optValue(args, '-m') ?? 300);
	const failOnHttp = args.some((a) => a === '-f' || a === '--fail' || (/^-[a-zA-Z]+$/.test(a) && a.includes('f')));
	const timedOut = async (what) => {
		await sleep(maxTime * 1000);
		fail(`curl: (28) ${what} after ${maxTime * 1000 + 1} milliseconds${what === 'Operation timed out' ? ' with 0 bytes received' : ''}`, 28);
	};
	if (vm.status !== 'running') return timedOut('Connection timed out');
	/** @type {Record<string, { status?: number, body?: string, hang?: boolean, refuseFirst?: number, paths?: Record<string, { status?: number, body?: string }> }>} */
	const http = readJson(join(guestDir(ctx.state, vm.vmid), 'http.json'), {});
	const site = http[String(port)];
	const refused = () => fail(`curl: (7) Failed to connect to ${ip} port ${port} after 0 ms: Couldn't connect to server`, 7);
	if (!site) refused();
	// Not up yet: counted down per GET.
	if (site.refuseFirst) {
		writeJson(join(guestDir(ctx.state, vm.vmid), 'http.json'), { ...http, [String(port)]: { ...site, refuseFirst: site.refuseFirst - 1 } });
		refused();
	}
	if (site.hang) return timedOut('Operation timed out');
	const page = site.paths?.[path] ?? (site.paths ? { status: 404, body: '404 page not found' } : site);
	const status = page.status ?? 200;
	if (status >= 400 && failOnHttp) fail(`curl: (22) The requested URL returned error: ${status}`, 22);
	process.stdout.write(page.body ?? '');
	return 0;
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export function curl(ctx, args) {
	if (ctx.ct === undefined) return curlToVm(ctx, args);
	const failOnHttp = args.some((a) => a === '-f' || a === '--fail' || (/^-[a-zA-Z]+$/.test(a) && a.includes('f')));
	const url = args.find((a) => /^https?:\/\//.test(a));
	if (!url) fail('curl: no URL specified!', 2);
	const m = /^http:\/\/(127\.0\.0\.1|localhost)(?::(\d+))?(\/.*)?$/.exec(url);
	if (!m) fail(`curl: (6) Could not resolve host: ${url.replace(/^https?:\/\//, '').split(/[/:]/)[0]}`, 6);
	const port = Number(m[2] ?? 80);
	const path = m[3] ?? '/';
	/** @type {Record<string, { status?: number, body?: string, paths?: Record<string, { status?: number, body?: string }> }>} */
	const http = readJson(join(guestDir(ctx.state, ctx.ct), 'http.json'), {});
	const units = loadUnits(ctx);
	let site = http[String(port)];
	if (!site) {
		const svc = Object.entries(SERVICE_PORTS).find(([u, p]) => p === port && units[u]?.active);
		if (svc) site = { status: 200, body: `<!DOCTYPE html><title>${svc[0]}</title>` };
	}
	if (!site) fail(`curl: (7) Failed to connect to 127.0.0.1 port ${port} after 0 ms: Couldn't connect to server`, 7);
	const page = site.paths?.[path] ?? (site.paths ? { status: 404, body: '404 page not found' } : site);
	const status = page.status ?? 200;
	if (status >= 400 && failOnHttp) fail(`curl: (22) The requested URL returned error: ${status}`, 22);
	process.stdout.write(page.body ?? '');
	return 0;
}
