// The opening the maintenance scripts share (`npm run replay`, `npm run review:rebuild`): the
// settings from .env, DATABASE_URL or else the embedded Postgres in NOMOS_DATA_DIR (started if
// Nomos is not running), migrations as the owner, and the pool connected as the app role — the
// same split as `npm start` (src/lib/server/boot.ts), so a script can do nothing the app could not.
import { existsSync } from 'node:fs';

if (existsSync('.env')) process.loadEnvFile('.env');
const { env } = await import('../src/lib/server/env');
const { connectDb, disconnectDb } = await import('../src/lib/server/db/index');
const { startEmbeddedPostgres } = await import('../src/lib/server/db/embedded');
const { runMigrations } = await import('../src/lib/server/db/migrate');
const { APP_ROLE, appRolePassword, ensureAppRole, grantAppRole, roleUrl } = await import('../src/lib/server/db/roles');

export type ScriptDb = { where: string; model: string | undefined; close: () => Promise<void> };

export async function openScriptDb(): Promise<ScriptDb> {
	const config = env();
	if (config.DATABASE_URL) {
		await runMigrations(config.NOMOS_OWNER_DATABASE_URL ?? config.DATABASE_URL);
		connectDb(config.DATABASE_URL, { max: 2 });
		return { where: 'DATABASE_URL', model: config.NOMOS_MODEL, close: () => disconnectDb() };
	}
	const embedded = await startEmbeddedPostgres({ dataDir: config.NOMOS_DATA_DIR, port: config.NOMOS_PG_PORT });
	const close = async () => {
		await disconnectDb();
		if (embedded.owned) await embedded.stop();
	};
	try {
		await runMigrations(embedded.url);
		const password = await appRolePassword(config.NOMOS_DATA_DIR);
		await ensureAppRole(embedded.url, password);
		await grantAppRole(embedded.url, APP_ROLE);
		connectDb(roleUrl(embedded.url, APP_ROLE, password), { max: 2 });
	} catch (e) {
		await close();
		throw e;
	}
	return { where: `embedded Postgres in ${config.NOMOS_DATA_DIR}`, model: config.NOMOS_MODEL, close };
}
