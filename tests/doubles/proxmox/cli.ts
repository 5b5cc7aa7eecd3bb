// Start the Proxmox double from the command line:
//   npx tsx tests/doubles/proxmox/cli.ts --port 2222 [--state dir] [--seed '<json SeedCt[]>'] [--node strong]
// Prints ONE JSON line { port, host, user, clientKeyPath, hostKeyFingerprint, stateDir }, runs until SIGTERM/SIGINT.
import { parseArgs } from 'node:util';
import { startProxmoxDouble, type SeedCt } from './server';

const { values } = parseArgs({
	options: {
		port: { type: 'string' },
		state: { type: 'string' },
		seed: { type: 'string' },
		node: { type: 'string' }
	}
});

function parseSeed(raw: string | undefined): SeedCt[] | undefined {
	if (!raw) return undefined;
	const seed: unknown = JSON.parse(raw);
	if (!Array.isArray(seed)) throw new Error('--seed must be a JSON array of { vmid, hostname, ... }');
	return seed as SeedCt[];
}

const double = await startProxmoxDouble({
	port: values.port ? Number(values.port) : undefined,
	stateDir: values.state,
	seed: parseSeed(values.seed),
	nodeName: values.node
});

const { port, host, user, clientKeyPath, hostKeyFingerprint, stateDir } = double;
process.stdout.write(JSON.stringify({ port, host, user, clientKeyPath, hostKeyFingerprint, stateDir }) + '\n');

let stopping = false;
const stop = (): void => {
	if (stopping) return;
	stopping = true;
	double.close().then(
		() => process.exit(0),
		(e: unknown) => {
			process.stderr.write(`proxmox double: close failed: ${String(e)}\n`);
			process.exit(1);
		}
	);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
