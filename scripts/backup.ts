// `npm run backup [FILE | DIR]`: one archive of Nomos's data, from a running instance or a stopped one.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';

if (existsSync('.env')) process.loadEnvFile('.env');
const { ConfigError, env } = await import('../src/lib/server/env');
const { logger } = await import('../src/lib/server/log');
const { createBackup, defaultBackupName } = await import('../src/lib/server/backup/backup');
const log = logger('backup');

try {
	const config = env();
	// FILE, or a directory to write the dated default name into (what the systemd timer does).
	const arg = process.argv[2];
	const file = !arg ? defaultBackupName() : existsSync(arg) && statSync(arg).isDirectory() ? path.join(arg, defaultBackupName()) : arg;
	const target = { databaseUrl: config.DATABASE_URL, dataDir: config.NOMOS_DATA_DIR, pgPort: config.NOMOS_PG_PORT };
	const r = await createBackup(target, file, (line) => log.info(line));
	const rows = r.manifest.tables.reduce((n, t) => n + t.rows, 0);
	const keys = r.manifest.keys.filter((k) => k.entry).length;
	log.info(
		{ file: r.file, bytes: r.bytes, tables: r.manifest.tables.length, rows, keys },
		`backup written: ${r.file} (${(r.bytes / 1024).toFixed(0)} KiB, ${rows} rows in ${r.manifest.tables.length} tables, ${keys} SSH key(s))`
	);
	const missing = r.manifest.keys.filter((k) => !k.entry);
	if (missing.length) log.warn(`not included (unreadable): ${missing.map((k) => `${k.path} (${k.missing})`).join(', ')}`);
} catch (e) {
	log.fatal(e instanceof ConfigError ? e.message : `backup failed: ${(e as Error).message}`);
	process.exit(1);
}
