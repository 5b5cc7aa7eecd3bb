import path from 'node:path';
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';

/** Arbitrary constant shared by every Nomos process: one migrator at a time per database. */
const MIGRATION_LOCK = 7_140_202_611;

/**
 * Applies the SQL migrations in `drizzle/` (relative to the working directory unless given).
 * Idempotent; concurrent callers serialise on a session advisory lock held on one connection.
 */
export async function runMigrations(url: string, folder = process.env.NOMOS_MIGRATIONS_DIR ?? 'drizzle'): Promise<void> {
	const client = postgres(url, { max: 1, onnotice: () => undefined });
	try {
		await client`select pg_advisory_lock(${MIGRATION_LOCK})`;
		try {
			await migrate(drizzle(client), { migrationsFolder: path.resolve(folder) });
		} finally {
			await client`select pg_advisory_unlock(${MIGRATION_LOCK})`;
		}
	} finally {
		await client.end({ timeout: 5 });
	}
}
