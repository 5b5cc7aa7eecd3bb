// `npm run restore FILE`: loads a backup into an empty data dir (or an empty DATABASE_URL database).
import { existsSync } from 'node:fs';

if (existsSync('.env')) process.loadEnvFile('.env');
const { ConfigError, env } = await import('../src/lib/server/env');
const { logger } = await import('../src/lib/server/log');
const { restoreBackup, RestoreRefused } = await import('../src/lib/server/backup/restore');
const log = logger('restore');

const file = process.argv[2];
if (!file) {
	log.fatal('usage: npm run restore FILE (a file `npm run backup` wrote)');
	process.exit(2);
}
try {
	const config = env();
	// As the database's owner: it reads every table, and a restore creates them (migrations).
	const target = { databaseUrl: config.NOMOS_OWNER_DATABASE_URL ?? config.DATABASE_URL, dataDir: config.NOMOS_DATA_DIR, pgPort: config.NOMOS_PG_PORT };
	const r = await restoreBackup(file, target, (line) => log.info(line));
	log.info(
		{ rows: r.rows, tables: r.manifest.tables.length, from: r.manifest.createdAt },
		`restored ${r.rows} rows in ${r.manifest.tables.length} tables from the backup of ${r.manifest.createdAt} into ${config.DATABASE_URL ? 'the DATABASE_URL database' : config.NOMOS_DATA_DIR}`
	);
	for (const k of r.keys) {
		if (k.outcome === 'written') log.info(`SSH key restored to ${k.path}`);
		else if (k.outcome === 'kept-existing') log.warn(`SSH key ${k.path}: ${k.note}`);
		else if (k.outcome === 'not-in-backup') log.warn(`SSH key ${k.path} was not in the backup (${k.note}); put it back by hand`);
	}
	log.info('start Nomos as usual (npm start)');
} catch (e) {
	log.fatal(e instanceof ConfigError || e instanceof RestoreRefused ? e.message : `restore failed: ${(e as Error).message}`);
	process.exit(1);
}
