#!/usr/bin/env node
// Entry point for the fake Proxmox VE binaries. Usage: fake-pve.mjs <tool> [args...]
// Every invocation appends its argv (argv[0] = tool name) to $PVE_DOUBLE_STATE/argv.log,
// then applies faults from faults.json, then runs the tool.
import { Exit, context, hangForever, logArgv, readFaults } from '../fake/common.mjs';
import { aptGet } from '../fake/apt-get.mjs';
import { pct } from '../fake/pct.mjs';
import { pvecm } from '../fake/pvecm.mjs';
import { pvesh } from '../fake/pvesh.mjs';
import { requireQuorum } from '../fake/cluster.mjs';
import { pvesm } from '../fake/pvesm.mjs';
import { systemctl } from '../fake/systemctl.mjs';
import { pveam } from '../fake/pveam.mjs';
import { qm } from '../fake/qm.mjs';
import { vzdump } from '../fake/vzdump.mjs';
import { zpool } from '../fake/zpool.mjs';
import { journalctl } from '../fake/journalctl.mjs';
import { curl, sha256sum } from '../fake/guest-tools.mjs';

/** @type {Record<string, (ctx: import('../fake/common.mjs').Ctx, args: string[]) => unknown>} */
const TOOLS = { pct, pvesh, pvecm, pvesm, systemctl, 'apt-get': aptGet, pveam, qm, vzdump, sha256sum, curl, zpool, journalctl };

const GUEST_WRITES = new Set([
	'create',
	'start',
	'stop',
	'shutdown',
	'reboot',
	'destroy',
	'set',
	'unlock',
	'snapshot',
	'rollback',
	'delsnapshot',
	'resize',
	'clone',
	'template',
	'restore',
	'move-volume',
	'importdisk'
]); // (migrate checks quorum itself, after `target is local node.`, as migrate_vm does)
/** Commands that write a guest config in /etc/pve, which a member without quorum cannot. */
const WRITES = { pct: (cmd) => GUEST_WRITES.has(cmd), qm: (cmd) => GUEST_WRITES.has(cmd), vzdump: () => true };

async function main() {
	const [tool, ...args] = process.argv.slice(2);
	const ctx = context();
	logArgv(ctx, [tool, ...args]);
	const run = TOOLS[tool];
	if (!run) throw new Exit(127, `fake-pve: unknown tool '${tool}'`);

	const faults = readFaults(ctx);
	if (faults.hang === tool) return hangForever(ctx, tool);
	const f = faults.fail;
	if (f && f.tool === tool && (!f.match || [tool, ...args].join(' ').includes(f.match))) {
		throw new Exit(f.exitCode ?? 255, f.stderr ?? '');
	}
	// A slow host: every host tool waits (a tool inside a guest, under `pct exec`, waited as pct already).
	if (faults.slowHost && ctx.ct === undefined) await new Promise((r) => setTimeout(r, Number(faults.slowHost.ms) || 0));
	// A slow tool: real `pct` is a Perl program that takes a few hundred ms to start.
	const slow = faults.slow;
	if (slow && slow.tool === tool && (!slow.match || [tool, ...args].join(' ').includes(slow.match))) {
		await new Promise((r) => setTimeout(r, slow.ms));
	}
	if (WRITES[tool]?.(args[0])) requireQuorum(ctx);
	const code = await run(ctx, args);
	return typeof code === 'number' ? code : 0;
}

main().then(
	(code) => process.exit(code ?? 0),
	(e) => {
		if (e instanceof Exit) {
			if (e.message) process.stderr.write(e.message.endsWith('\n') ? e.message : e.message + '\n');
			process.exit(e.code);
		}
		process.stderr.write(`fake-pve internal error: ${e?.stack ?? e}\n`);
		process.exit(70);
	}
);
