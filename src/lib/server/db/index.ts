import postgres from 'postgres';

/*
 * Queries are raw postgres.js tagged templates, in one style: every query function in
 * `queries/<aggregate>.ts` takes the `sql` or `tx` it runs on as its first parameter, and
 * timestamps come back as ISO 8601 text. The transactional core needs explicit transactions with
 * advisory locks, `for update`, and the event log written in the same transaction as the change
 * (events → NOTIFY at commit); tagged templates say that directly, and a query builder beside them
 * would be a second style. Drizzle's schema (schema.ts) is the source of truth for migrations
 * (drizzle-kit generate) and for the rows' types: a query's row is `typeof table.$inferSelect` or a
 * Pick/Omit of it plus the fields it computes; it is not used to build queries.
 * tests/unit/sql-columns.test.ts checks that every column a template names is in the schema.
 */

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;

interface DbState {
	url: string;
	sql: Sql;
}

/**
 * Postgres's ISO text for a timestamp: "2026-11-30 16:13:38.123456+00", fraction and offset
 * optional. With the session in UTC the offset is always +00.
 */
const PG_TIMESTAMP = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?([+-]\d\d(?::\d\d){0,2})?$/;

/**
 * "2026-11-30T16:13:38.123456Z": always six fraction digits, so equal-width strings sort in time
 * order; `new Date()` reads it (to the millisecond). Anything else (infinity, BC) is left as is.
 */
export function isoTimestamp(text: string, assumeUtc = false): string {
	const m = PG_TIMESTAMP.exec(text);
	if (!m) return text;
	const [, date, time, frac = '', offset] = m;
	const zone = offset === undefined ? (assumeUtc ? 'Z' : '') : offset === '+00' ? 'Z' : offset.length === 3 ? `${offset}:00` : offset;
	return `${date}T${time}.${frac.padEnd(6, '0')}${zone}`;
}

/** Parameters: Dates as ISO text; strings are passed as written (Postgres reads ISO and its own form). */
const serializeTimestamp = (x: unknown): string => (x instanceof Date ? x.toISOString() : typeof x === 'number' ? new Date(x).toISOString() : String(x));

const types: Record<string, postgres.PostgresType> = {
	timestamptz: { to: 1184, from: [1184], serialize: serializeTimestamp, parse: (x: string) => isoTimestamp(x) },
	// timestamp without time zone: Nomos stores none, but a `at time zone 'UTC'` result reads as UTC.
	timestamp: { to: 1114, from: [1114], serialize: serializeTimestamp, parse: (x: string) => isoTimestamp(x, true) },
	// date stays "YYYY-MM-DD" both ways (postgres.js would make it a Date at local midnight).
	date: { to: 1082, from: [1082], serialize: (x: unknown) => (x instanceof Date ? x.toISOString().slice(0, 10) : String(x)), parse: (x: string) => x }
};

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
		// The timestamp parsers rely on Postgres's ISO output in UTC.
		connection: { TimeZone: 'UTC', DateStyle: 'ISO, MDY', application_name: 'nomos' },
		types
	});
	g.__nomosDb = { url, sql };
	return g.__nomosDb;
}

function state(): DbState {
	if (!g.__nomosDb) throw new Error('database not connected yet (boot has not run)');
	return g.__nomosDb;
}

/** The process's postgres.js client (its one pool). */
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
