// The Nomos processes of the chaos bench: N web (`node server.js`, NOMOS_WORKER=off) and M worker
// (`node --import tsx scripts/worker.ts`) processes on one database, each restarted a moment
// after it exits, as systemd's Restart=always would.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { ROOT, sleep } from '../harness';
import type { Random } from './random';

export type Role = 'web' | 'worker';

export interface Member {
	name: string;
	role: Role;
	/** Web processes keep their port across restarts (a load balancer's fixed backends). */
	port?: number;
	child?: ChildProcess;
	pid?: number;
	up: boolean;
	/** Set while this bench is stopping it (a kill of ours), so its exit is not counted as a crash. */
	killing?: NodeJS.Signals;
	starts: number;
}

export interface KillRecord {
	at: number;
	name: string;
	role: Role;
	pid: number;
	signal: NodeJS.Signals;
	exitedAt?: number;
	/** A SIGTERM that did not end the process within the stop timeout was followed by SIGKILL. */
	escalated?: boolean;
	restartedAt?: number;
}

export interface FleetOptions {
	web: number;
	worker: number;
	/** The environment every Nomos process gets (DATABASE_URL, NOMOS_HOSTS, the model, the operator). */
	env: NodeJS.ProcessEnv;
	ports: number[];
	logDir: string;
	random: Random;
	/** Restart delay after an exit, ms. */
	restartDelay: [number, number];
	/** After a SIGTERM, SIGKILL follows this much later (systemd's TimeoutStopSec). */
	stopTimeoutMs: number;
	/** True once a worker process has registered itself (it can take jobs). */
	workerReady(pid: number): Promise<boolean>;
	/** Each line a process writes (stdout and stderr), with its pid. */
	onLine?: (pid: number, line: string) => void;
	log(line: string): void;
}

export class Fleet {
	readonly members: Member[] = [];
	readonly kills: KillRecord[] = [];
	/** Exits nobody asked for (a crash, a failed start). */
	readonly crashes: { at: number; name: string; code: number | null; signal: string | null }[] = [];
	#stopping = false;
	#restarts = new Set<NodeJS.Timeout>();

	constructor(private readonly opts: FleetOptions) {
		for (let i = 0; i < opts.web; i++) this.members.push({ name: `web-${i + 1}`, role: 'web', port: opts.ports[i], up: false, starts: 0 });
		for (let i = 0; i < opts.worker; i++) this.members.push({ name: `worker-${i + 1}`, role: 'worker', up: false, starts: 0 });
	}

	/** Starts every process and waits until each serves (web) or has registered (worker). */
	async start(timeoutMs = 120_000): Promise<void> {
		for (const m of this.members) this.#spawn(m);
		const until = Date.now() + timeoutMs;
		while (!this.members.every((m) => m.up)) {
			if (Date.now() > until)
				throw new Error(
					`not ready within ${timeoutMs / 1000} s: ${this.members
						.filter((m) => !m.up)
						.map((m) => m.name)
						.join(', ')} (logs in ${this.opts.logDir})`
				);
			await sleep(200);
		}
	}

	webBases(): string[] {
		return this.members.filter((m) => m.role === 'web' && m.up).map((m) => `http://127.0.0.1:${m.port}`);
	}

	/** Every configured web address, live or not (the operator's list of places to try). */
	allWebBases(): string[] {
		return this.members.filter((m) => m.role === 'web').map((m) => `http://127.0.0.1:${m.port}`);
	}

	live(): Member[] {
		return this.members.filter((m) => m.up && !m.killing && m.child);
	}

	fullyUp(): boolean {
		return this.members.every((m) => m.up && !m.killing);
	}

	/** Sends `signal` to the member; SIGTERM escalates to SIGKILL after the stop timeout. */
	kill(m: Member, signal: NodeJS.Signals): KillRecord {
		const child = m.child!;
		const rec: KillRecord = { at: Date.now(), name: m.name, role: m.role, pid: child.pid!, signal };
		this.kills.push(rec);
		m.killing = signal;
		child.kill(signal);
		if (signal === 'SIGTERM') {
			const timer = setTimeout(() => {
				if (child.exitCode === null && child.signalCode === null) {
					rec.escalated = true;
					child.kill('SIGKILL');
				}
			}, this.opts.stopTimeoutMs);
			child.once('exit', () => clearTimeout(timer));
		}
		return rec;
	}

	/** Stops every process (SIGTERM, then SIGKILL after `graceMs`) and restarts none. */
	async stop(graceMs = 15_000): Promise<void> {
		this.#stopping = true;
		for (const t of this.#restarts) clearTimeout(t);
		await Promise.all(
			this.members.map(async (m) => {
				const c = m.child;
				if (!c || c.exitCode !== null || c.signalCode !== null) return;
				const exited = new Promise<void>((r) => c.once('exit', () => r()));
				c.kill('SIGTERM');
				if (await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])) return;
				c.kill('SIGKILL');
				await Promise.race([exited, sleep(2000)]);
			})
		);
	}

	/** Last resort on exit: no orphans. */
	killAllNow(): void {
		this.#stopping = true;
		for (const m of this.members) if (m.child && m.child.exitCode === null) m.child.kill('SIGKILL');
	}

	#spawn(m: Member): void {
		const web = m.role === 'web';
		const args = web ? ['server.js'] : ['--import', 'tsx', 'scripts/worker.ts'];
		const env: NodeJS.ProcessEnv = {
			...this.opts.env,
			...(web
				? {
						NODE_ENV: 'production',
						PORT: String(m.port),
						HOST: '127.0.0.1',
						ORIGIN: `http://127.0.0.1:${m.port}`,
						NOMOS_WORKER: 'off',
						NOMOS_LOG_LEVEL: 'info'
					}
				: {})
		};
		const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
		m.child = child;
		m.pid = child.pid;
		m.up = false;
		m.killing = undefined;
		m.starts++;
		const out = createWriteStream(path.join(this.opts.logDir, `${m.name}.log`), { flags: 'a' });
		out.write(`--- start ${m.starts} pid ${child.pid} at ${new Date().toISOString()}\n`);
		child.stdout.pipe(out, { end: false });
		child.stderr.pipe(out, { end: false });
		const onLine = this.opts.onLine;
		if (onLine) for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream }).on('line', (l) => onLine(child.pid!, l));
		child.once('exit', (code, signal) => {
			m.up = false;
			out.end(`--- exit code ${code} signal ${signal} at ${new Date().toISOString()}\n`);
			const rec = [...this.kills].reverse().find((k) => k.pid === child.pid);
			if (rec) rec.exitedAt = Date.now();
			else if (!this.#stopping) {
				this.crashes.push({ at: Date.now(), name: m.name, code, signal });
				this.opts.log(`${m.name} (pid ${child.pid}) exited by itself: code ${code}, signal ${signal}`);
			}
			if (this.#stopping) return;
			const [lo, hi] = this.opts.restartDelay;
			const timer = setTimeout(
				() => {
					this.#restarts.delete(timer);
					if (this.#stopping) return;
					this.#spawn(m);
					if (rec) rec.restartedAt = Date.now();
				},
				this.opts.random.between(lo, hi)
			);
			this.#restarts.add(timer);
		});
		void this.#watchReady(m, child);
	}

	async #watchReady(m: Member, child: ChildProcess): Promise<void> {
		const alive = () => child.exitCode === null && child.signalCode === null && m.child === child;
		while (alive()) {
			const ready =
				m.role === 'web'
					? await fetch(`http://127.0.0.1:${m.port}/login`, { signal: AbortSignal.timeout(5000) }).then(
							(r) => r.status === 200,
							() => false
						)
					: await this.opts.workerReady(child.pid!).catch(() => false);
			if (ready && alive()) {
				m.up = true;
				return;
			}
			await sleep(100);
		}
	}
}
