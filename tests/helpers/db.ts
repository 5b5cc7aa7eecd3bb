import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, inject } from 'vitest';
import { connectDb, disconnectDb, sql } from '../../src/lib/server/db/index';
import { APP_ROLE, roleUrl } from '../../src/lib/server/db/roles';
import { TEMPLATE_DB, withDatabase } from './global-setup';
import { scaled } from './time';

/** Creates a fresh database: a clone of the migrated template, or empty. Returns its URL. */
export async function createTestDatabase(opts: { empty?: boolean } = {}): Promise<string> {
	const adminUrl = inject('pgAdminUrl');
	const name = `t_${randomBytes(6).toString('hex')}`;
	const admin = postgres(adminUrl, { max: 1, onnotice: () => undefined });
	try {
		await admin.unsafe(opts.empty ? `create database ${name}` : `create database ${name} template ${TEMPLATE_DB}`);
	} finally {
		await admin.end();
	}
	return withDatabase(adminUrl, name);
}

/** The same database as `url` (a superuser's), as the app's role (`nomos_app`, as `npm start` connects). */
export function asAppRole(url: string): string {
	return roleUrl(url, APP_ROLE, inject('pgAppPassword'));
}

/**
 * Gives the test file its own migrated database and connects the app's db module to it: as the
 * superuser, or with `as: 'app'` as the app's role, the way Nomos itself connects (fixtures then
 * go through the same rights as the app). Returns a getter for the superuser's URL (set once
 * beforeAll ran).
 */
export function useTestDatabase(opts: { as?: 'superuser' | 'app' } = {}): () => string {
	let url = '';
	beforeAll(async () => {
		url = await createTestDatabase();
		connectDb(opts.as === 'app' ? asAppRole(url) : url);
	});
	afterAll(async () => {
		await disconnectDb();
	});
	return () => url;
}

/**
 * Resolves once a backend of the app's database waits on a lock with a query `like` the pattern
 * (pg_stat_activity, polled): the proof that a statement is blocked, instead of a sleep that
 * guesses how long getting there takes. Throws after `timeoutMs`.
 */
export async function waitForLockWaiter(queryLike: string, timeoutMs = 15_000): Promise<void> {
	timeoutMs = scaled(timeoutMs);
	for (const until = Date.now() + timeoutMs; ;) {
		const [{ n }] = await sql()<{ n: number }[]>`
			select count(*)::int as n from pg_stat_activity
			where datname = current_database() and wait_event_type = 'Lock' and query like ${queryLike} and pid <> pg_backend_pid()`;
		if (n > 0) return;
		if (Date.now() > until) throw new Error(`no statement like ${queryLike} waited on a lock within ${timeoutMs} ms`);
		await new Promise((r) => setTimeout(r, 10));
	}
}
