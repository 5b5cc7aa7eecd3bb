import { existsSync } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../db/embedded';

/** Where a backup reads from or a restore writes to: DATABASE_URL, else the embedded data dir. */
export interface BackupTarget {
	databaseUrl?: string;
	dataDir: string;
	pgPort: number;
}

export interface OpenedDatabase {
	url: string;
	source: 'embedded' | 'external';
	/** Stops the embedded server if this call started it (a running Nomos's server is left running). */
	close(): Promise<void>;
}

/** A data dir that holds an embedded cluster. */
export function hasCluster(dataDir: string): boolean {
	return existsSync(path.join(path.resolve(dataDir), 'pg', 'PG_VERSION'));
}

/**
 * Connects to the target's database: DATABASE_URL as is, else the embedded server of the data
 * dir, reused when Nomos is running (its postmaster.pid) or started for the time of the call.
 */
export async function openDatabase(t: BackupTarget, log: (line: string) => void): Promise<OpenedDatabase> {
	if (t.databaseUrl) return { url: t.databaseUrl, source: 'external', close: async () => undefined };
	const pg: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir: t.dataDir, port: t.pgPort, log });
	return { url: pg.url, source: 'embedded', close: () => (pg.owned ? pg.stop() : Promise.resolve()) };
}
