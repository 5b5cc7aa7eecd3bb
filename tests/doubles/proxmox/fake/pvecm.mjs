// Fake `pvecm` (Proxmox VE cluster manager): `status` and `nodes` as PVE 8 prints them (the
// corosync-quorumtool view of this member's partition), read from the shared cluster.json.
// Checked against pve-cluster stable-bookworm (8.1.x) src/PVE/CLI/pvecm.pm (`printf "%-17s %s\n"`
// for the Cluster information block, then `exec('corosync-quorumtool', '-siH')`; `nodes` execs
// `corosync-quorumtool -l`) and corosync v3.1.9 tools/corosync-quorumtool.c (display_quorum_data,
// display_nodes_data: `printf("0x%08x ", id)`, votes right-aligned in 10 columns, ` (local)`).
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
	// corosync v3.1.x tools/corosync-quorumtool.c show_status: `return (is_quorate ? EXIT_SUCCESS : EXIT_NOT_QUORATE);` (2)
	return ok ? 0 : 2;
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
	// pve-cluster stable-bookworm src/PVE/Corosync.pm check_conf_exists: `my $exists = -f
	// "$basedir/corosync.conf"; die "Error: Corosync config '$basedir/corosync.conf' does not exist -
	// is this node part of a cluster?\n"`. An uncaught Perl die exits with $! when set: the failed
	// stat left ENOENT (2) there — derived from perl's die semantics, not seen on a host.
	if (!cluster) fail("Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?", 2);
	if (cmd === 'status') return status(ctx, cluster); // exits 2 when not quorate, like corosync-quorumtool
	if (cmd === 'nodes') return nodes(ctx, cluster);
	fail(`pvecm ${cmd}: not faked by the double`);
}
