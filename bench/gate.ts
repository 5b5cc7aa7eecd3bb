// The gate's added time per command: the same argv over the same SSH double, once with a key
// that has a full shell and once with a key whose forced command is deploy/nomos-gate, on one
// open connection each (no handshakes in the figure). Goal: median added <= 20 ms.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect, execArgv, type SshTarget } from '../src/lib/server/ssh/client';
import { generateKeyPair, startProxmoxDouble } from '../tests/doubles/proxmox/server';

const N = Number(process.argv[2] ?? 60);
const dir = mkdtempSync(join(tmpdir(), 'nomos-bench-gate-'));
const gated = await generateKeyPair(dir, 'gated');
const pve = await startProxmoxDouble({
	delayMs: 0,
	seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }],
	authorizedKeys: `restrict,command="perl ${resolve('deploy/nomos-gate')} --role mutate --allow ${resolve('deploy/nomos-gate.allow')}" ${readFileSync(gated.publicKeyPath, 'utf8').trim()}`
});
const target = (keyPath: string): SshTarget => ({
	name: 'b',
	address: pve.host,
	port: pve.port,
	username: 'root',
	keyPath,
	hostKeyFingerprint: pve.hostKeyFingerprint
});
const plain = await connect(target(pve.clientKeyPath));
const gate = await connect(target(gated.privateKeyPath));
// a large shape (pct create has the most lines), a read, and a grouped read
const argvs: [string, string[], boolean][] = [
	['pct status', ['pct', 'status', '100'], false],
	['pct config (grouped)', ['pct', 'config', '100'], true],
	['pct set', ['pct', 'set', '100', '--cores', '2', '--description', 'x'], false]
];
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const time = async (c: typeof plain, argv: string[], group: boolean) => {
	const t = performance.now();
	const r = await execArgv(c, argv, { timeoutMs: 30_000, group });
	if (r.exitCode === 126) throw new Error(`refused: ${r.stderr}`);
	return performance.now() - t;
};
console.log(`gate overhead, ${N} runs each (interleaved), ms`);
const all: number[] = [];
for (const [name, argv, group] of argvs) {
	const d: number[] = [];
	for (let i = 0; i < N; i++) {
		const a = await time(plain, argv, group);
		const b = await time(gate, argv, group);
		d.push(b - a);
	}
	all.push(...d);
	console.log(`${name.padEnd(22)} added median ${pct(d, 0.5).toFixed(1)}  p95 ${pct(d, 0.95).toFixed(1)}`);
}
console.log(`${'all'.padEnd(22)} added median ${pct(all, 0.5).toFixed(1)}  p95 ${pct(all, 0.95).toFixed(1)}  (goal: median <= 20)`);
plain.end();
gate.end();
await pve.close();
rmSync(dir, { recursive: true, force: true });
