// The gate's added time per command: the same argv over the same SSH double, once with a key
// that has a full shell and once with a key whose forced command is deploy/nomos-gate — the
// mutation key (`--role mutate`) for every argv, the read key (`--role read`) for the reads —
// on one open connection each (no handshakes in the figure). Also how long the read key takes to
// refuse a mutation. Goal: median added <= 20 ms.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect, execArgv, type SshTarget } from '../src/lib/server/ssh/client';
import { generateKeyPair, startProxmoxDouble } from '../tests/doubles/proxmox/server';

const N = Number(process.argv[2] ?? 60);
const dir = mkdtempSync(join(tmpdir(), 'nomos-bench-gate-'));
const gated = await generateKeyPair(dir, 'gated');
const reader = await generateKeyPair(dir, 'reader');
const line = (role: string, pub: string) =>
	`restrict,command="perl ${resolve('deploy/nomos-gate')} --role ${role} --allow ${resolve('deploy/nomos-gate.allow')}" ${readFileSync(pub, 'utf8').trim()}`;
const pve = await startProxmoxDouble({
	delayMs: 0,
	seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }],
	authorizedKeys: [line('mutate', gated.publicKeyPath), line('read', reader.publicKeyPath)].join('\n')
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
const read = await connect(target(reader.privateKeyPath));
// a large shape (pct create has the most lines), a read, and a grouped read; the read key only gets the reads
const argvs: [string, string[], boolean, typeof plain][] = [
	['pct status', ['pct', 'status', '100'], false, gate],
	['pct config (grouped)', ['pct', 'config', '100'], true, gate],
	['pct set', ['pct', 'set', '100', '--cores', '2', '--description', 'x'], false, gate],
	['read: pct status', ['pct', 'status', '100'], false, read],
	['read: pct config (gr.)', ['pct', 'config', '100'], true, read]
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
const reads: number[] = [];
for (const [name, argv, group, via] of argvs) {
	const d: number[] = [];
	for (let i = 0; i < N; i++) {
		const a = await time(plain, argv, group);
		const b = await time(via, argv, group);
		d.push(b - a);
	}
	(via === read ? reads : all).push(...d);
	console.log(`${name.padEnd(22)} added median ${pct(d, 0.5).toFixed(1)}  p95 ${pct(d, 0.95).toFixed(1)}`);
}
console.log(`${'all (mutation key)'.padEnd(22)} added median ${pct(all, 0.5).toFixed(1)}  p95 ${pct(all, 0.95).toFixed(1)}  (goal: median <= 20)`);
console.log(`${'all (read key)'.padEnd(22)} added median ${pct(reads, 0.5).toFixed(1)}  p95 ${pct(reads, 0.95).toFixed(1)}  (goal: median <= 20)`);
// A mutation sent with the read key: refused by the gate (exit 126), nothing run.
const refusals: number[] = [];
for (let i = 0; i < N; i++) {
	const t = performance.now();
	const r = await execArgv(read, ['pct', 'set', '100', '--cores', '2'], { timeoutMs: 30_000 });
	if (r.exitCode !== 126) throw new Error(`the read key ran a mutation: exit ${String(r.exitCode)}`);
	refusals.push(performance.now() - t);
}
console.log(`${'read key refuses set'.padEnd(22)} total median ${pct(refusals, 0.5).toFixed(1)}  p95 ${pct(refusals, 0.95).toFixed(1)}`);
plain.end();
gate.end();
read.end();
await pve.close();
rmSync(dir, { recursive: true, force: true });
