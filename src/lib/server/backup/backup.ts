import fs from 'node:fs/promises';
import path from 'node:path';
import { addAbortSignal } from 'node:stream';
import postgres from 'postgres';
import type { TransactionSql } from '../db/index';
import { APP_PASSWORD_FILE } from '../db/roles';
import { SEAL_KEY_FILE } from '../db/seal';
import { copyTableOut, listAppliedMigrations, listBackupTables, listHostKeyPaths, listSequenceValues, type TableShape } from '../db/queries/backup';
import { MANIFEST_ENTRY, type Manifest } from './manifest';
import { writeTarGz, type TarEntry } from './tar';
import { hasCluster, openDatabase, type BackupTarget } from './target';

export interface BackupResult {
	file: string;
	manifest: Manifest;
	bytes: number;
}

/** `nomos-backup-2026-12-01T06-30-00Z.tar.gz` */
export function defaultBackupName(now = new Date()): string {
	return `nomos-backup-${now.toISOString().slice(0, 19).replace(/:/g, '-')}Z.tar.gz`;
}

/** Files under the data dir other than the Postgres cluster and its password (a new one is made on restore). */
async function dataDirFiles(dataDir: string): Promise<string[]> {
	const root = path.resolve(dataDir);
	const out: string[] = [];
	const walk = async (dir: string) => {
		for (const d of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
			const full = path.join(dir, d.name);
			const rel = path.relative(root, full);
			// The cluster and its roles' passwords belong to the server, not the data: a restore makes new ones.
			// The seal key stays out too: a backup never holds both the approvals and the key that vouches for them.
			if (rel === 'pg' || rel === 'pg-password' || rel === APP_PASSWORD_FILE || rel === SEAL_KEY_FILE) continue;
			if (d.isDirectory()) await walk(full);
			else if (d.isFile()) out.push(rel);
		}
	};
	await walk(root);
	return out.sort();
}

export interface BackupOptions {
	/** Stops the backup (SIGTERM, SIGINT): its connection is closed and the partial file removed. */
	signal?: AbortSignal;
	/** Largest archive entry a table's rows are cut into (held in memory while written). */
	partBytes?: number;
	/** Told each archive entry's name as it goes into the archive (progress). */
	onEntry?: (name: string) => void;
}

/**
 * The file a backup writes while it runs, renamed to `file` when whole. It names the writing
 * process, so that a later backup can tell a partial file whose writer was killed (SIGKILL, OOM,
 * power: no handler ran to remove it) from one still being written.
 */
export const partialName = (file: string, pid = process.pid): string => `${path.resolve(file)}.${pid}.partial`;

const PARTIAL = /^.+\.(\d+)\.partial$/;

/** Whether `pid` runs here and is not a zombie (an exited process nobody reaped yet). */
async function running(pid: number): Promise<boolean> {
	try {
		process.kill(pid, 0);
	} catch (e) {
		return (e as NodeJS.ErrnoException).code === 'EPERM';
	}
	const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
	return !stat || stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

/**
 * Removes the partial archives in `dir` whose writer no longer runs: each holds password hashes
 * and keys, and with dated names no later backup would ever overwrite it. Returns their paths.
 */
export async function removeStalePartials(dir: string): Promise<string[]> {
	const removed: string[] = [];
	const names = await fs.readdir(dir).catch(() => [] as string[]);
	for (const name of names) {
		const pid = Number(PARTIAL.exec(name)?.[1]);
		if (!pid || pid === process.pid || (await running(pid))) continue;
		await fs.rm(path.join(dir, name), { force: true });
		removed.push(path.join(dir, name));
	}
	return removed;
}

/** A dump running longer than this between two statements has lost its client: the server ends it. */
const IDLE_IN_SNAPSHOT_MS = 5 * 60_000;

/**
 * One table's COPY text as archive entries of at most `partBytes` each, read as the archive
 * takes them (the socket waits while gzip and the disk catch up).
 */
async function* tableEntries(tx: TransactionSql, t: TableShape, partBytes: number, into: Manifest['tables'], signal?: AbortSignal): AsyncGenerator<TarEntry> {
	const names: string[] = [];
	let rows = 0;
	let chunks: Buffer[] = [];
	let size = 0;
	const cut = (): TarEntry => {
		const name = names.length ? `db/${t.name}.${names.length + 1}.copy` : `db/${t.name}.copy`;
		names.push(name);
		const e = { name, content: chunks };
		chunks = [];
		size = 0;
		return e;
	};
	const copy = await copyTableOut(tx, t);
	if (signal) addAbortSignal(signal, copy);
	for await (const chunk of copy as AsyncIterable<Buffer>) {
		for (const b of chunk) if (b === 10) rows++;
		chunks.push(chunk);
		size += chunk.length;
		if (size >= partBytes) yield cut();
	}
	if (size > 0 || names.length === 0) yield cut();
	const [entry, ...parts] = names;
	into.push({ name: t.name, columns: t.columns, rows, entry, ...(parts.length ? { parts } : {}) });
}

/**
 * Writes one archive of Nomos's data from a running (or stopped) instance: every table of
 * schema public as COPY text, all read in one repeatable-read snapshot (consistent across
 * tables while Nomos keeps running), the sequences, which migrations were applied, the SSH
 * private keys the hosts name, and the other files of the data dir. The rows stream from the
 * server straight into the archive, nothing is staged in a temp folder; the archive is written
 * to `<file>.partial` (mode 0600: it holds keys and password hashes) and renamed at the end, so
 * a file with the final name is always whole. A failed or aborted backup removes the partial file.
 */
export async function createBackup(
	target: BackupTarget,
	file: string,
	log: (line: string) => void = () => undefined,
	opts: BackupOptions = {}
): Promise<BackupResult> {
	const out = path.resolve(file);
	const { signal } = opts;
	const partBytes = opts.partBytes ?? 8 * 1024 * 1024;
	if (!target.databaseUrl && !hasCluster(target.dataDir)) {
		throw new Error(`no Nomos data in ${path.resolve(target.dataDir)} (set NOMOS_DATA_DIR or DATABASE_URL)`);
	}
	await fs.access(out).then(
		() => {
			throw new Error(`${out} already exists; name another file`);
		},
		() => undefined
	);
	signal?.throwIfAborted();
	for (const f of await removeStalePartials(path.dirname(out))) log(`removed ${f}: a partial archive whose backup was killed`);
	const partial = partialName(out);
	await fs.rm(partial, { force: true });
	const db = await openDatabase(target, log);
	const sql = postgres(db.url, {
		max: 1,
		onnotice: () => undefined,
		connection: { application_name: 'nomos-backup', idle_in_transaction_session_timeout: IDLE_IN_SNAPSHOT_MS }
	});
	// Closing the connection ends a COPY that waits on a lock or on a paused socket at once.
	const stop = () => void sql.end({ timeout: 0 });
	signal?.addEventListener('abort', stop, { once: true });
	let failure: unknown;
	try {
		signal?.throwIfAborted();
		const manifest: Manifest = {
			format: 'nomos-backup',
			version: 1,
			createdAt: new Date().toISOString(),
			source: db.source,
			migrations: [],
			tables: [],
			sequences: [],
			keys: [],
			dataFiles: []
		};
		await sql.begin('isolation level repeatable read read only', async (tx) => {
			manifest.migrations = await listAppliedMigrations(tx);
			const tables = await listBackupTables(tx);
			manifest.sequences = await listSequenceValues(tx);
			const keyPaths = await listHostKeyPaths(tx);
			async function* entries(): AsyncGenerator<TarEntry> {
				for (const [i, p] of keyPaths.entries()) {
					try {
						const content = await fs.readFile(p);
						const entry = `keys/${i}-${path.basename(p)}`;
						manifest.keys.push({ path: p, entry });
						yield { name: entry, content };
					} catch (e) {
						const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
						manifest.keys.push({ path: p, entry: null, missing: why });
						log(`SSH key ${p} not included: ${why}`);
					}
				}
				if (!target.databaseUrl) {
					for (const rel of await dataDirFiles(target.dataDir)) {
						const entry = `data/${rel.split(path.sep).join('/')}`;
						manifest.dataFiles.push({ path: rel, entry });
						yield { name: entry, file: path.join(path.resolve(target.dataDir), rel) };
					}
				}
				for (const t of tables) yield* tableEntries(tx, t, partBytes, manifest.tables, signal);
				if (manifest.tables.some((t) => t.parts)) manifest.version = 2;
				yield { name: MANIFEST_ENTRY, content: Buffer.from(JSON.stringify(manifest, null, '\t') + '\n') };
			}
			async function* told(): AsyncGenerator<TarEntry> {
				for await (const e of entries()) {
					opts.onEntry?.(e.name);
					yield e;
				}
			}
			await writeTarGz(partial, told(), signal).catch((e: unknown) => {
				// A COPY may be cut off mid-way: the connection cannot roll back, it is closed, and
				// this is the error to report (not the failed rollback's).
				failure = e;
				stop();
				throw e;
			});
		});
		await fs.rename(partial, out);
		const { size } = await fs.stat(out);
		return { file: out, manifest, bytes: size };
	} catch (e) {
		throw signal?.aborted ? (signal.reason ?? e) : (failure ?? e);
	} finally {
		signal?.removeEventListener('abort', stop);
		await sql.end({ timeout: 5 });
		await db.close();
		await fs.rm(partial, { force: true });
	}
}
