import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, inject } from 'vitest';
import { connectDb, disconnectDb } from '../../src/lib/server/db/index';
import { TEMPLATE_DB, withDatabase } from './global-setup';

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

/**
 * Gives the test file its own migrated database and connects the app's db module to it.
 * Returns a getter for the URL (set once beforeAll ran).
 */
export function useTestDatabase(): () => string {
	let url = '';
	beforeAll(async () => {
		url = await createTestDatabase();
		connectDb(url);
	});
	afterAll(async () => {
		await disconnectDb();
	});
	return () => url;
}
