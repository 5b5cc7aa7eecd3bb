import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { copyTableIn, countRows, databaseIsEmpty, setSequenceValue, skipTriggersForLoad } from '../db/queries/backup';
import { migrationsDir, runMigrations } from '../db/migrate';
import { MANIFEST_ENTRY, manifestSchema, type Manifest } from './manifest';
import { extractTarGz } from './tar';
import { openDatabase, type BackupTarget } from './target';

export class RestoreRefused extends Error {}

export interface RestoreResult {
	manifest: Manifest;
	rows: number;
	/** What happened to each SSH key the backup held. */
	keys: Array<{ path: string; outcome: 'written' | 'unchanged' | 'kept-existing' | 'not-in-backup'; note?: string }>;
}

interface Journal {
	entries: Array<{ idx: number; when: number; tag: string }>;
}

async function readJournal(dir: string): Promise<Journal> {
	return JSON.parse(await fs.readFile(path.join(dir, 'meta', '_journal.json'), 'utf8')) as Journal;
}

/**
 * A copy of the migrations folder that stops at the backup's newest migration: the rows are
 * loaded into the schema they were dumped from, and the newer migrations (with any data changes
 * they make) run after, as on an upgrade.
 */
async function migrationsUpTo(dir: string, newest: number, into: string): Promise<void> {
	const journal = await readJournal(dir);
	const entries = journal.entries.filter((e) => e.when <= newest);
	await fs.mkdir(path.join(into, 'meta'), { recursive: true });
	for (const e of entries) await fs.copyFile(path.join(dir, `${e.tag}.sql`), path.join(into, `${e.tag}.sql`));
	await fs.writeFile(path.join(into, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }));
}

async function isEmptyDir(dir: string): Promise<boolean> {
	try {
		return (await fs.readdir(dir)).length === 0;
	} catch (e) {
		if ((e as NodeJS.ErrnoException).code === 'ENOENT') return true;
		throw e;
	}
}

async function sameContent(file: string, content: Buffer): Promise<boolean | null> {
	try {
		return (await fs.readFile(file)).equals(content);
	} catch (e) {
		if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
		throw e;
	}
}

/**
 * Loads a backup into an empty data dir (or, with DATABASE_URL, an empty database): creates the
 * schema the backup was taken with, loads every table in one transaction (row counts checked
 * against the manifest before commit), sets the sequences, then applies this code's newer
 * migrations. SSH keys go back to their paths when nothing is there; an existing different file
 * is kept and the backup's copy written beside it (`.from-backup`). Refuses a non-empty target
 * and a backup from a newer Nomos (migrations this code does not know).
 */
export async function restoreBackup(archive: string, target: BackupTarget, log: (line: string) => void = () => undefined): Promise<RestoreResult> {
	const file = path.resolve(archive);
	await fs.access(file).catch(() => {
		throw new RestoreRefused(`${file}: no such backup file`);
	});
	if (!target.databaseUrl && !(await isEmptyDir(target.dataDir))) {
		throw new RestoreRefused(
			`${path.resolve(target.dataDir)} is not empty: restore loads into an empty data dir (move it away, or set NOMOS_DATA_DIR to a new directory)`
		);
	}
	const work = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-restore-'));
	try {
		await extractTarGz(file, path.join(work, 'archive'));
		const read = (entry: string) => path.join(work, 'archive', entry);
		let manifest: Manifest;
		try {
			manifest = manifestSchema.parse(JSON.parse(await fs.readFile(read(MANIFEST_ENTRY), 'utf8')));
		} catch (e) {
			throw new RestoreRefused(`${file} is not a Nomos backup this version can read: ${(e as Error).message.split('\n')[0]}`);
		}
		const dir = migrationsDir();
		const known = new Set((await readJournal(dir)).entries.map((e) => e.when));
		const unknown = manifest.migrations.filter((m) => !known.has(Number(m.createdAt)));
		if (unknown.length) {
			throw new RestoreRefused(
				`the backup was made by a newer Nomos (${unknown.length} migration(s) this code does not have); restore it with that version or newer`
			);
		}
		if (!manifest.migrations.length) throw new RestoreRefused('the backup holds no migrated database');
		const backupNewest = Math.max(...manifest.migrations.map((m) => Number(m.createdAt)));
		await migrationsUpTo(dir, backupNewest, path.join(work, 'migrations'));

		const db = await openDatabase(target, log);
		let rows = 0;
		let loaded = false;
		try {
			if (db.source === 'external') {
				const probe = postgres(db.url, { max: 1, onnotice: () => undefined });
				const empty = await databaseIsEmpty(probe).finally(() => probe.end({ timeout: 5 }));
				if (!empty) throw new RestoreRefused('the database DATABASE_URL names is not empty: restore loads into an empty database (create a new one)');
			}
			await runMigrations(db.url, path.join(work, 'migrations'));
			const sql = postgres(db.url, { max: 1, onnotice: () => undefined, connection: { application_name: 'nomos-restore' } });
			try {
				await sql.begin(async (tx) => {
					const quiet = await skipTriggersForLoad(tx);
					if (!quiet) log('not a superuser: loading with triggers on, in foreign-key order');
					for (const t of manifest.tables) {
						const entries = [t.entry, ...(t.parts ?? [])];
						await pipeline(
							async function* () {
								for (const e of entries) yield* createReadStream(read(e));
							},
							await copyTableIn(tx, { name: t.name, columns: t.columns })
						);
						const n = await countRows(tx, t.name);
						if (n !== t.rows) throw new Error(`restore: ${t.name} has ${n} rows after loading, the backup says ${t.rows}`);
						rows += n;
					}
					for (const s of manifest.sequences) await setSequenceValue(tx, s);
				});
			} finally {
				await sql.end({ timeout: 5 });
			}
			await runMigrations(db.url, dir);
			loaded = true;
		} finally {
			await db.close();
			// The data dir was empty: what a failed restore left there goes, so it can be run again.
			if (!loaded && !target.databaseUrl) await fs.rm(path.resolve(target.dataDir), { recursive: true, force: true });
		}

		const keys: RestoreResult['keys'] = [];
		for (const k of manifest.keys) {
			if (!k.entry) {
				keys.push({ path: k.path, outcome: 'not-in-backup', note: k.missing });
				continue;
			}
			const content = await fs.readFile(read(k.entry));
			const same = await sameContent(k.path, content);
			if (same === true) keys.push({ path: k.path, outcome: 'unchanged' });
			else if (same === null) {
				await fs.mkdir(path.dirname(k.path), { recursive: true, mode: 0o700 });
				await fs.writeFile(k.path, content, { mode: 0o600, flag: 'wx' });
				keys.push({ path: k.path, outcome: 'written' });
			} else {
				await fs.writeFile(`${k.path}.from-backup`, content, { mode: 0o600 });
				keys.push({ path: k.path, outcome: 'kept-existing', note: `differs from the backup's; that copy is at ${k.path}.from-backup` });
			}
		}
		if (!target.databaseUrl) {
			for (const f of manifest.dataFiles) {
				const dest = path.join(path.resolve(target.dataDir), f.path);
				if (!dest.startsWith(path.resolve(target.dataDir) + path.sep)) throw new Error(`restore: data file outside the data dir: ${f.path}`);
				await fs.mkdir(path.dirname(dest), { recursive: true });
				await fs.copyFile(read(f.entry), dest);
			}
		}
		return { manifest, rows, keys };
	} finally {
		await fs.rm(work, { recursive: true, force: true });
	}
}
