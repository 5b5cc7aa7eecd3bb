// Fake `pvecm` (Proxmox VE cluster manager): `status` and `nodes` as PVE 8 prints them (the
// corosync-quorumtool view of this member's partition), read from the shared cluster.json.
import { fail, out } from './common.mjs';
import { clusterOf, partitionOf, quorate } from './cluster.mjs';

const hex = (n) => `0x${n.toString(16).padStart(8, '0')}`;
const line = (label, value) => out(`${`${label}:`.padEnd(18)}${value}`);

/** `Wed Dec  2 00:50:29 2026`, as date(1) and corosync-quorumtool print it. */
function ctime(d = new Date()) {
	const s = d.toString(); // `Wed Dec 02 2026 00:50:29 GMT+0000 (…)`
	const [wd, mon, day, year, time] = s.split(' ');
	return `${wd} ${mon} ${String(Number(day)).padStart(2)} ${time} ${year}`;
}

function header(title) {
	out(title);
	out('-'.repeat(title.length));
}

function status(ctx, cluster) {
	const self = cluster.nodes.find((n) => n.name === ctx.node);
	const members = partitionOf(cluster, ctx.node);
	const expected = cluster.nodes.length;
	const needed = Math.floor(expected / 2) + 1;
	const ok = quorate(cluster, ctx.node);
	header('Cluster information');
	line('Name', cluster.name);
	line('Config Version', cluster.configVersion);
	line('Transport', 'knet');
	line('Secure auth', 'on');
	out('');
	header('Quorum information');
	line('Date', ctime());
	line('Quorum provider', 'corosync_votequorum');
	line('Nodes', members.length);
	line('Node ID', hex(self.nodeid));
	line('Ring ID', `${members[0].nodeid}.${(cluster.configVersion * 16 + members.length).toString(16)}`);
	line('Quorate', ok ? 'Yes' : 'No');
	out('');
	header('Votequorum information');
	line('Expected votes', expected);
	line('Highest expected', expected);
	line('Total votes', members.length);
	line('Quorum', ok ? `${needed}  ` : `${needed} Activity blocked`);
	line('Flags', ok ? 'Quorate ' : '');
	out('');
	header('Membership information');
	out('    Nodeid      Votes Name');
	for (const m of members) out(`${hex(m.nodeid)}          1 ${m.ip}${m.name === ctx.node ? ' (local)' : ''}`);
}

function nodes(ctx, cluster) {
	out('');
	header('Membership information');
	out('    Nodeid      Votes Name');
	for (const m of partitionOf(cluster, ctx.node)) out(`${String(m.nodeid).padStart(10)} ${'1'.padStart(10)} ${m.name}${m.name === ctx.node ? ' (local)' : ''}`);
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export function pvecm(ctx, args) {
	const [cmd] = args;
	if (!cmd || !['status', 'nodes', 'expected', 'add', 'create', 'delnode', 'updatecerts', 'qdevice', 'mtunnel', 'help'].includes(cmd)) {
		fail(`ERROR: unknown command 'pvecm${cmd ? ` ${cmd}` : ''}'\nUSAGE: pvecm <COMMAND> [ARGS] [OPTIONS]`);
	}
	const cluster = clusterOf();
	if (!cluster) fail("Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?", 2);
	if (cmd === 'status') return status(ctx, cluster);
	if (cmd === 'nodes') return nodes(ctx, cluster);
	fail(`pvecm ${cmd}: not faked by the double`);
}
