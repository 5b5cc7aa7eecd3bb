// Start the Proxmox double from the command line:
//   npx tsx tests/doubles/proxmox/cli.ts --port 2222 [--state dir] [--seed '<json SeedCt[]>'] [--vms '<json SeedVm[]>'] [--node strong] [--slow-host ms]
// (--slow-host: every host tool waits that long first, as a host mid-backup; the `slowHost` fault)
// Prints ONE JSON line { port, host, user, clientKeyPath, hostKeyFingerprint, stateDir }, runs until SIGTERM/SIGINT.
//
// A cluster of doubles (each its own SSH server and node, sharing one cluster view):
//   npx tsx tests/doubles/proxmox/cli.ts --cluster 3 [--port 2222] [--name homelab] [--seed …] [--vms …]
// Nodes pve1…pveN on ports port…port+N-1 (default: free ports); --seed and --vms go to pve1. Prints ONE
// JSON line { cluster, dir, members: [{ node, port, host, user, clientKeyPath, hostKeyFingerprint,
// stateDir }] }, then (on stderr) how to add each member as a host in Nomos.
import { parseArgs } from 'node:util';
import { startProxmoxCluster } from './cluster';
import { startProxmoxDouble, type ProxmoxDouble, type SeedCt, type SeedVm } from './server';

const { values } = parseArgs({
	options: {
		port: { type: 'string' },
		state: { type: 'string' },
		seed: { type: 'string' },
		vms: { type: 'string' },
		node: { type: 'string' },
		cluster: { type: 'string' },
		name: { type: 'string' },
		'slow-host': { type: 'string' }
	}
});

function parseList<T>(raw: string | undefined, flag: string): T[] | undefined {
	if (!raw) return undefined;
	const list: unknown = JSON.parse(raw);
	if (!Array.isArray(list)) throw new Error(`--${flag} must be a JSON array of { vmid, ... }`);
	return list as T[];
}

const seed = parseList<SeedCt>(values.seed, 'seed');
const vms = parseList<SeedVm>(values.vms, 'vms');
const port = values.port ? Number(values.port) : undefined;
const described = (d: ProxmoxDouble) => ({
	port: d.port,
	host: d.host,
	user: d.user,
	clientKeyPath: d.clientKeyPath,
	hostKeyFingerprint: d.hostKeyFingerprint,
	stateDir: d.stateDir
});

let close: () => Promise<void>;
if (values.cluster !== undefined) {
	const n = Number(values.cluster);
	if (!Number.isInteger(n) || n < 2 || n > 9) throw new Error('--cluster takes the number of nodes, 2 to 9');
	if (values.state || values.node) throw new Error('--state and --node are for one double; a cluster names its nodes pve1…pveN in a temp dir');
	const cluster = await startProxmoxCluster({
		name: values.name,
		members: Array.from({ length: n }, (_, i) => ({ name: `pve${i + 1}`, port: port === undefined ? undefined : port + i, ...(i === 0 ? { seed, vms } : {}) }))
	});
	close = () => cluster.close();
	process.stdout.write(
		JSON.stringify({ cluster: cluster.name, dir: cluster.dir, members: cluster.members.map((m) => ({ node: m.nodeName, ...described(m) })) }) + '\n'
	);
	process.stderr.write(
		[
			`cluster ${cluster.name}: ${n} nodes. Add each one you want Nomos to act on as a host (Settings → Hosts), named as its node:`,
			...cluster.members.map(
				(m) => `  ${m.nodeName}: address ${m.host}, port ${m.port}, user ${m.user}, key ${m.clientKeyPath}, host key ${m.hostKeyFingerprint}`
			),
			'A node left out is shown in the cluster entity but gets no command. Stop with Ctrl-C (the state dir is removed).'
		].join('\n') + '\n'
	);
} else {
	const double = await startProxmoxDouble({ port, stateDir: values.state, seed, vms, nodeName: values.node });
	if (values['slow-host']) await double.setFault('slowHost', { ms: Number(values['slow-host']) });
	close = () => double.close();
	process.stdout.write(JSON.stringify(described(double)) + '\n');
}

let stopping = false;
const stop = (): void => {
	if (stopping) return;
	stopping = true;
	close().then(
		() => process.exit(0),
		(e: unknown) => {
			process.stderr.write(`proxmox double: close failed: ${String(e)}\n`);
			process.exit(1);
		}
	);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
