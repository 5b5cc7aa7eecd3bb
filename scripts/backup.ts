// `npm run backup [FILE | DIR]`: one archive of Nomos's data, from a running instance or a stopped one.
import { existsSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

if (existsSync('.env')) process.loadEnvFile('.env');
const { ConfigError, env } = await import('../src/lib/server/env');
const { logger } = await import('../src/lib/server/log');
const { createBackup, defaultBackupName, partialName } = await import('../src/lib/server/backup/backup');
const log = logger('backup');

// SIGTERM (systemctl stop, a unit timeout) or Ctrl-C: close the connection, remove the partial
// archive, exit 128+n. It holds password hashes and keys: none of it may stay behind.
const EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
const aborter = new AbortController();
let stoppedBy: keyof typeof EXIT_CODES | undefined;
let partial: string | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
	process.once(signal, () => {
		if (stoppedBy) return;
		stoppedBy = signal;
		log.warn(`${signal}: stopping the backup and removing what it wrote`);
		aborter.abort(new Error(`stopped by ${signal}`));
		// Should the clean-up itself hang, the partial file still goes.
		setTimeout(() => {
			if (partial) rmSync(partial, { force: true });
			process.exit(EXIT_CODES[signal]);
		}, 5_000).unref();
	});
}

try {
	const config = env();
	// FILE, or a directory to write the dated default name into (what the systemd timer does).
	const arg = process.argv[2];
	const file = !arg ? defaultBackupName() : existsSync(arg) && statSync(arg).isDirectory() ? path.join(arg, defaultBackupName()) : arg;
	// As the database's owner: it reads every table, and a restore creates them (migrations).
	const target = { databaseUrl: config.NOMOS_OWNER_DATABASE_URL ?? config.DATABASE_URL, dataDir: config.NOMOS_DATA_DIR, pgPort: config.NOMOS_PG_PORT };
	partial = partialName(file);
	const r = await createBackup(target, file, (line) => log.info(line), { signal: aborter.signal });
	const rows = r.manifest.tables.reduce((n, t) => n + t.rows, 0);
	const keys = r.manifest.keys.filter((k) => k.entry).length;
	log.info(
		{ file: r.file, bytes: r.bytes, tables: r.manifest.tables.length, rows, keys },
		`backup written: ${r.file} (${(r.bytes / 1024).toFixed(0)} KiB, ${rows} rows in ${r.manifest.tables.length} tables, ${keys} SSH key(s))`
	);
	const missing = r.manifest.keys.filter((k) => !k.entry);
	if (missing.length) log.warn(`not included (unreadable): ${missing.map((k) => `${k.path} (${k.missing})`).join(', ')}`);
} catch (e) {
	if (stoppedBy) {
		log.warn(`backup not written (${stoppedBy}); nothing left behind`);
		process.exit(EXIT_CODES[stoppedBy]);
	}
	log.fatal(e instanceof ConfigError ? e.message : `backup failed: ${(e as Error).message}`);
	process.exit(1);
}
