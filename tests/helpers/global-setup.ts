import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/lib/server/db/embedded';
import { runMigrations } from '../../src/lib/server/db/migrate';
import { migrateWorkerSchema } from '../../src/lib/server/jobs/worker';
import { APP_ROLE, ensureAppRole, grantAppRole } from '../../src/lib/server/db/roles';
import { freePort } from './ports';

declare module 'vitest' {
	export interface ProvidedContext {
		/** URL of the `postgres` database on the run's one embedded server. */
		pgAdminUrl: string;
		/** The app role's password on that server (`useTestDatabase({ as: 'app' })`). */
		pgAppPassword: string;
	}
}

export const TEMPLATE_DB = 'nomos_template';

/** One embedded Postgres per test run; every test file clones a migrated template database. */
export default async function setup(project: TestProject) {
	const dir = path.resolve('tests/.tmp', `vitest-pg-${process.pid}`);
	await fs.rm(dir, { recursive: true, force: true });
	const server = await startEmbeddedPostgres({ dataDir: dir, port: await freePort() });
	const admin = postgres(server.url, { max: 1, onnotice: () => undefined });
	await admin.unsafe(`create database ${TEMPLATE_DB}`);
	await admin.end();
	const templateUrl = withDatabase(server.url, TEMPLATE_DB);
	await runMigrations(templateUrl);
	await migrateWorkerSchema(templateUrl);
	// The app's role, as boot makes it for an embedded data dir; every clone of the template
	// carries the grants (they live in the database's catalog).
	const appPassword = randomBytes(18).toString('base64url');
	await ensureAppRole(server.url, appPassword);
	await grantAppRole(templateUrl, APP_ROLE);
	project.provide('pgAdminUrl', server.url);
	project.provide('pgAppPassword', appPassword);
	return async () => {
		await server.stop();
		await fs.rm(dir, { recursive: true, force: true });
	};
}

export function withDatabase(url: string, name: string): string {
	const u = new URL(url);
	u.pathname = `/${name}`;
	return u.toString();
}
