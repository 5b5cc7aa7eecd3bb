import postgres from 'postgres';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import * as schema from './schema';

export type Db = PostgresJsDatabase<typeof schema>;
export type Sql = postgres.Sql;

interface DbState {
	url: string;
	sql: Sql;
	db: Db;
}

// On globalThis so `vite dev` module reloads keep one pool per process.
const g = globalThis as unknown as { __nomosDb?: DbState };

/** Opens the process's one connection pool. Calling it again with the same URL is a no-op. */
export function connectDb(url: string, opts: { max?: number } = {}): DbState {
	if (g.__nomosDb) {
		if (g.__nomosDb.url === url) return g.__nomosDb;
		throw new Error('the database is already connected to another URL');
	}
	const sql = postgres(url, {
		max: opts.max ?? 10,
		onnotice: () => undefined,
		connection: { application_name: 'nomos' }
	});
	g.__nomosDb = { url, sql, db: drizzle(sql, { schema }) };
	return g.__nomosDb;
}

function state(): DbState {
	if (!g.__nomosDb) throw new Error('database not connected yet (boot has not run)');
	return g.__nomosDb;
}

/** The drizzle database over the process's pool. */
export function db(): Db {
	return state().db;
}

/** The raw postgres.js client (same pool), for hand-written SQL. */
export function sql(): Sql {
	return state().sql;
}

export function databaseUrl(): string {
	return state().url;
}

export async function disconnectDb(): Promise<void> {
	const s = g.__nomosDb;
	g.__nomosDb = undefined;
	await s?.sql.end({ timeout: 5 });
}

export { schema };
