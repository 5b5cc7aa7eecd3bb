import { readFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';

/**
 * Arbitrary constant shared by every Nomos process: one migrator at a time per database (Nomos's
 * migrations, graphile-worker's and the app role's grants, roles.ts).
 */
export const MIGRATION_LOCK = 7_140_202_611;

/** Where the migrations are: `NOMOS_MIGRATIONS_DIR`, else `drizzle/` under the working directory. */
export const migrationsDir = (): string => path.resolve(process.env.NOMOS_MIGRATIONS_DIR ?? 'drizzle');

/**
 * Applies the SQL migrations in `drizzle/` (relative to the working directory unless given).
 * Idempotent; concurrent callers serialise on a session advisory lock held on one connection.
 * A database that already has the newest migration is recognised with one query, without the
 * lock and without loading drizzle's migrator (the common case: every start but an upgrade).
 */
export async function runMigrations(url: string, folder = migrationsDir()): Promise<void> {
	const dir = path.resolve(folder);
	const client = postgres(url, { max: 1, onnotice: () => undefined });
	try {
		if (await upToDate(client, dir)) return;
		const [{ drizzle }, { migrate }] = await Promise.all([import('drizzle-orm/postgres-js'), import('drizzle-orm/postgres-js/migrator')]);
		await client`select pg_advisory_lock(${MIGRATION_LOCK})`;
		try {
			await migrate(drizzle(client), { migrationsFolder: dir });
		} finally {
			await client`select pg_advisory_unlock(${MIGRATION_LOCK})`;
		}
	} finally {
		await client.end({ timeout: 5 });
	}
}

/** The journal time of the newest migration in `dir` (drizzle's `meta/_journal.json`). */
export async function newestMigration(dir: string): Promise<number> {
	const journal = JSON.parse(await readFile(path.join(dir, 'meta', '_journal.json'), 'utf8')) as { entries: Array<{ when: number }> };
	return Math.max(...journal.entries.map((e) => e.when));
}

/** The journal time of the newest migration applied to the database; null when none is (a new database). */
export async function newestAppliedMigration(client: postgres.Sql): Promise<number | null> {
	try {
		const [row] = await client<Array<{ applied: string | null }>>`select max(created_at)::text as applied from drizzle.__drizzle_migrations`;
		return row.applied === null ? null : Number(row.applied);
	} catch (e) {
		// A new database: no migrations schema or table yet.
		if (['3F000', '42P01'].includes((e as { code?: string }).code ?? '')) return null;
		throw e;
	}
}

/**
 * drizzle's own rule: a migration runs when its journal time is newer than the newest applied
 * one. So when the newest applied is at least the journal's newest, there is nothing to run.
 * /readyz asks the same question (health.ts).
 */
export function migrationsUpToDate(applied: number | null, newest: number): boolean {
	return applied !== null && applied >= newest;
}

async function upToDate(client: postgres.Sql, dir: string): Promise<boolean> {
	const [newest, applied] = await Promise.all([newestMigration(dir), newestAppliedMigration(client)]);
	return migrationsUpToDate(applied, newest);
}
