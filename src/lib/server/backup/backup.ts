import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { copyTableOut, listAppliedMigrations, listBackupTables, listHostKeyPaths, listSequenceValues } from '../db/queries/backup';
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
			if (rel === 'pg' || rel === 'pg-password') continue;
			if (d.isDirectory()) await walk(full);
			else if (d.isFile()) out.push(rel);
		}
	};
	await walk(root);
	return out.sort();
}

/**
 * Writes one archive of Nomos's data from a running (or stopped) instance: every table of
 * schema public as COPY text, all read in one repeatable-read snapshot (consistent across
 * tables while Nomos keeps running), the sequences, which migrations were applied, the SSH
 * private keys the hosts name, and the other files of the data dir. Written to `<file>.partial`
 * and renamed at the end: a file with the final name is always whole. Mode 0600: it holds keys
 * and password hashes.
 */
export async function createBackup(target: BackupTarget, file: string, log: (line: string) => void = () => undefined): Promise<BackupResult> {
	const out = path.resolve(file);
	if (!target.databaseUrl && !hasCluster(target.dataDir)) {
		throw new Error(`no Nomos data in ${path.resolve(target.dataDir)} (set NOMOS_DATA_DIR or DATABASE_URL)`);
	}
	await fs.access(out).then(
		() => {
			throw new Error(`${out} already exists; name another file`);
		},
		() => undefined
	);
	const work = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-backup-'));
	const db = await openDatabase(target, log);
	const sql = postgres(db.url, { max: 1, onnotice: () => undefined, connection: { application_name: 'nomos-backup' } });
	try {
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
		const entries: TarEntry[] = [];
		let keyPaths: string[] = [];
		await sql.begin('isolation level repeatable read read only', async (tx) => {
			manifest.migrations = await listAppliedMigrations(tx);
			const tables = await listBackupTables(tx);
			for (const t of tables) {
				const entry = `db/${t.name}.copy`;
				const local = path.join(work, `${t.name}.copy`);
				let rows = 0;
				const count = new Transform({
					transform(chunk: Buffer, _enc, done) {
						for (const b of chunk) if (b === 10) rows++;
						done(null, chunk);
					}
				});
				await pipeline(await copyTableOut(tx, t), count, createWriteStream(local, { mode: 0o600 }));
				manifest.tables.push({ name: t.name, columns: t.columns, rows, entry });
				entries.push({ name: entry, file: local });
			}
			manifest.sequences = await listSequenceValues(tx);
			keyPaths = await listHostKeyPaths(tx);
		});
		for (const [i, p] of keyPaths.entries()) {
			try {
				const content = await fs.readFile(p);
				const entry = `keys/${i}-${path.basename(p)}`;
				entries.push({ name: entry, content });
				manifest.keys.push({ path: p, entry });
			} catch (e) {
				const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
				manifest.keys.push({ path: p, entry: null, missing: why });
				log(`SSH key ${p} not included: ${why}`);
			}
		}
		if (!target.databaseUrl) {
			for (const rel of await dataDirFiles(target.dataDir)) {
				const entry = `data/${rel.split(path.sep).join('/')}`;
				entries.push({ name: entry, file: path.join(path.resolve(target.dataDir), rel) });
				manifest.dataFiles.push({ path: rel, entry });
			}
		}
		entries.unshift({ name: MANIFEST_ENTRY, content: Buffer.from(JSON.stringify(manifest, null, '\t') + '\n') });
		const partial = `${out}.partial`;
		await fs.rm(partial, { force: true });
		try {
			await writeTarGz(partial, entries);
			await fs.rename(partial, out);
		} catch (e) {
			await fs.rm(partial, { force: true });
			throw e;
		}
		const { size } = await fs.stat(out);
		return { file: out, manifest, bytes: size };
	} finally {
		await sql.end({ timeout: 5 });
		await db.close();
		await fs.rm(work, { recursive: true, force: true });
	}
}
