// Pieces the process-level benches share (loop-load.ts, chaos.ts): the doubles as child processes,
// free ports, stopping a child, quantiles.
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/lib/server/db/embedded';
import { freePort } from '../tests/helpers/ports';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const loadAverage = () =>
	os
		.loadavg()
		.map((x) => x.toFixed(2))
		.join(' ');

/** Ports other work on this machine uses (Playwright's servers, the LLM double it starts). */
const RESERVED_PORTS = new Set([41731, 41800, 41900]);

/** A free port on 127.0.0.1 that no other suite on this machine reserves. */
export async function benchPort(): Promise<number> {
	for (;;) {
		const p = await freePort();
		if (!RESERVED_PORTS.has(p)) return p;
	}
}

/**
 * A bench's one way out. The returned `cleanup` runs `stop` once (later calls share it); SIGINT
 * and SIGTERM run it and exit 130. On any exit, `kill` runs (synchronously: no orphan children),
 * and an embedded Postgres the bench started is sent SIGINT if `stop` never began.
 */
export function exitCleanly(o: {
	log: (s: string) => void;
	stop: () => Promise<void>;
	kill?: () => void;
	pg: () => EmbeddedPostgres | undefined;
}): () => Promise<void> {
	let cleaning: Promise<void> | undefined;
	const cleanup = () => (cleaning ??= o.stop());
	for (const sig of ['SIGINT', 'SIGTERM'] as const) {
		process.on(sig, () => {
			if (cleaning) return;
			o.log(`${sig}: stopping`);
			void cleanup().finally(() => process.exit(130));
		});
	}
	process.on('exit', () => {
		o.kill?.();
		const pg = o.pg();
		if (pg?.owned && !cleaning) {
			try {
				process.kill(pg.pid, 'SIGINT');
			} catch {
				/* gone */
			}
		}
	});
	return cleanup;
}

/**
 * A bench's database. Alone, a bench starts its own embedded Postgres in `dataDir` (a folder the
 * OS user postgres can traverse). Under `npm run bench:smoke`, which starts one server for all and
 * migrates a template database there once (BENCH_PG_URL, BENCH_PG_PID, BENCH_PG_TEMPLATE), it gets
 * its own database copied from that template instead: no initdb, server start and migrations per
 * bench. `stop()` then drops the database; `owned` is false (the server is the smoke's).
 */
export async function benchPostgres(dataDir: string, log?: (line: string) => void): Promise<EmbeddedPostgres> {
	const shared = process.env.BENCH_PG_URL;
	if (!shared) return startEmbeddedPostgres({ dataDir, port: await benchPort(), log });
	const name = `bench_${path.basename(process.argv[1] ?? 'x', '.ts').replace(/\W/g, '_')}_${process.pid}`;
	const admin = postgres(shared, { max: 1, onnotice: () => undefined });
	try {
		await admin.unsafe(`create database "${name}" template "${process.env.BENCH_PG_TEMPLATE ?? 'bench_template'}"`);
	} finally {
		await admin.end({ timeout: 5 });
	}
	const url = new URL(shared);
	url.pathname = `/${name}`;
	let stopped: Promise<void> | undefined;
	return {
		url: url.toString(),
		owned: false,
		pid: Number(process.env.BENCH_PG_PID),
		stop: () =>
			(stopped ??= (async () => {
				const sql = postgres(shared, { max: 1, onnotice: () => undefined });
				try {
					await sql.unsafe(`drop database if exists "${name}" with (force)`);
				} finally {
					await sql.end({ timeout: 5 });
				}
			})())
	};
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child is gone (or a second later). */
export async function stopChild(child: ChildProcess, graceMs = 3000): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null) return;
	const exited = new Promise<void>((r) => child.once('exit', () => r()));
	child.kill('SIGTERM');
	if (await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])) return;
	child.kill('SIGKILL');
	await Promise.race([exited, sleep(1000)]);
}

/**
 * Starts a double's CLI (`node --import tsx <args>`) as a child process and resolves with the
 * child and the JSON line it prints once listening. `nice` lowers its priority (inherited by the
 * processes it starts), so a double standing in for another machine takes only CPU left over.
 */
export async function startDouble<T>(
	name: string,
	args: string[],
	opts: { env?: NodeJS.ProcessEnv; nice?: number } = {}
): Promise<{ child: ChildProcess; info: T }> {
	const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
		cwd: ROOT,
		env: { ...process.env, ...opts.env },
		stdio: ['ignore', 'pipe', 'inherit']
	});
	if (child.pid && opts.nice) os.setPriority(child.pid, opts.nice);
	const info = await new Promise<T>((resolve, reject) => {
		let out = '';
		const timer = setTimeout(() => reject(new Error(`${name} did not start within 60 s`)), 60_000);
		child.once('exit', (code) => reject(new Error(`${name} exited (code ${code}) while starting`)));
		child.stdout.on('data', (chunk: Buffer) => {
			out += chunk.toString('utf8');
			const nl = out.indexOf('\n');
			if (nl === -1) return;
			clearTimeout(timer);
			child.stdout.removeAllListeners('data');
			child.stdout.resume();
			resolve(JSON.parse(out.slice(0, nl)) as T);
		});
	}).catch((e: unknown) => {
		child.kill('SIGKILL');
		throw e;
	});
	return { child, info };
}

/** What the Proxmox double's CLI prints once listening. */
export type ProxmoxDoubleInfo = { port: number; clientKeyPath: string; hostKeyFingerprint: string; stateDir: string };

export type Stats = { n: number; p50: number; p95: number; max: number };

/** Nearest-rank quantiles of the finite values. */
export function stats(xs: number[]): Stats {
	const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
	const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? NaN;
	return { n: s.length, p50: q(0.5), p95: q(0.95), max: s[s.length - 1] ?? NaN };
}

/**
 * A size knob from the environment (`BENCH_SESSIONS=30`): an integer ≥ `min`, or `fallback` when unset.
 * `npm run bench:smoke` runs every bench small through these and the benches' flags.
 */
export function envInt(name: string, fallback: number, min = 1): number {
	const raw = process.env[name];
	if (raw === undefined || raw === '') return fallback;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got ${raw}`);
	return n;
}

/** Under `npm run bench:smoke` (BENCH_SMOKE=1) a missed time target is printed, not an exit code: tiny runs on a busy machine time nothing. */
export const SMOKE = process.env.BENCH_SMOKE === '1';

export const ms = (x: number) => (Number.isFinite(x) ? `${Math.round(x)}` : '—');
