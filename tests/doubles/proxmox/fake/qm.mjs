// Fake `qm` for minimal VMs (state in vms/<vmid>.json): list, status, start, stop.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fail, out, parseOpts, parseVmid, readJson, truthy, writeJson } from './common.mjs';

const vmFile = (ctx, vmid) => join(ctx.state, 'vms', `${vmid}.json`);

function listVms(ctx) {
	const dir = join(ctx.state, 'vms');
	if (!existsSync(dir)) return [];
	return readdirSync(dir)
		.filter((f) => /^\d+\.json$/.test(f))
		.map((f) => readJson(join(dir, f), undefined))
		.filter(Boolean)
		.sort((a, b) => a.vmid - b.vmid);
}

function loadVm(ctx, vmid) {
	const vm = readJson(vmFile(ctx, vmid), undefined);
	if (!vm) fail(`Configuration file 'nodes/${ctx.node}/qemu-server/${vmid}.conf' does not exist`, 2);
	return vm;
}

const pid = (vm) => (vm.status === 'running' ? 200000 + vm.vmid : 0);

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export function qm(ctx, args) {
	const [cmd, ...rest] = args;
	if (cmd === 'list') {
		const vms = listVms(ctx);
		if (!vms.length) return;
		const row = (a, b, c, d, e, f) => `${String(a).padStart(10)} ${String(b).padEnd(20)} ${String(c).padEnd(10)} ${String(d).padEnd(10)} ${String(e).padStart(12)} ${String(f).padEnd(10)}`;
		out(row('VMID', 'NAME', 'STATUS', 'MEM(MB)', 'BOOTDISK(GB)', 'PID'));
		for (const vm of vms) out(row(vm.vmid, vm.name, vm.status, vm.memory, vm.diskGb.toFixed(2), pid(vm)));
		return;
	}
	if (!['status', 'start', 'stop', 'shutdown'].includes(cmd ?? '')) {
		fail(`ERROR: unknown command 'qm${cmd ? ` ${cmd}` : ''}'\nUSAGE: qm <COMMAND> [ARGS] [OPTIONS]`);
	}
	const { positional, opts } = parseOpts(rest, new Set(['verbose', 'skiplock']));
	const vm = loadVm(ctx, parseVmid(positional[0], `qm ${cmd} <vmid> [OPTIONS]`));
	const save = (v) => writeJson(vmFile(ctx, v.vmid), v);
	switch (cmd) {
		case 'status':
			out(`status: ${vm.status}`);
			if (truthy(opts.get('verbose'))) {
				out(`cpus: ${vm.cores}`);
				out(`maxdisk: ${Math.round(vm.diskGb * 1024 ** 3)}`);
				out(`maxmem: ${vm.memory * 1024 ** 2}`);
				out(`name: ${vm.name}`);
				if (vm.status === 'running') out(`pid: ${pid(vm)}`);
				out(`qmpstatus: ${vm.status}`);
				out(`uptime: ${vm.status === 'running' ? Math.max(1, Math.floor((Date.now() - (vm.startedAt ?? Date.now())) / 1000)) : 0}`);
				out(`vmid: ${vm.vmid}`);
			}
			return;
		case 'start':
			if (vm.lock) fail(`VM is locked (${vm.lock})`);
			if (vm.status === 'running') fail(`VM ${vm.vmid} already running`);
			return save({ ...vm, status: 'running', startedAt: Date.now() });
		case 'stop':
		case 'shutdown':
			if (vm.lock) fail(`VM is locked (${vm.lock})`);
			// Stopping a stopped VM is a silent no-op in PVE.
			return save({ ...vm, status: 'stopped' });
	}
}
