// `npm run replay -- <case>`: replays a saved regression case (Admin → Review → a session →
// Replay → Save as a case) against the model configured now (OPENAI_BASE_URL, NOMOS_MODEL…),
// prints the saved figures beside the new ones and exits 1 when the case regressed (more operator
// actions, a finding back, the goal not reached). Nothing runs on a host. Uses DATABASE_URL, else
// the embedded Postgres in NOMOS_DATA_DIR (started if Nomos is not running), like `npm start`.
import { existsSync } from 'node:fs';

if (existsSync('.env')) process.loadEnvFile('.env');
const { env } = await import('../src/lib/server/env');
const { connectDb, disconnectDb } = await import('../src/lib/server/db/index');
const { startEmbeddedPostgres } = await import('../src/lib/server/db/embedded');
const { runMigrations } = await import('../src/lib/server/db/migrate');
const { runReplayCase } = await import('../src/lib/server/replay/cases');
const { formatComparison } = await import('../src/lib/server/replay/compare');

const log = (s: string) => process.stdout.write(s + '\n');
const name = process.argv[2];
if (!name) {
	log('usage: npm run replay -- <case name or id>');
	process.exit(2);
}
const config = env();
const embedded = config.DATABASE_URL ? null : await startEmbeddedPostgres({ dataDir: config.NOMOS_DATA_DIR, port: config.NOMOS_PG_PORT });
const url = config.DATABASE_URL ?? embedded!.url;
try {
	await runMigrations(config.NOMOS_OWNER_DATABASE_URL ?? url);
	connectDb(url, { max: 2 });
	log(`replaying case ${name} against ${config.NOMOS_MODEL ?? 'no model'}…`);
	const r = await runReplayCase(name);
	log(formatComparison(r.rows, ['saved', 'now']));
	if (r.ok) log(`case ${name}: ok (replay ${r.replayId})`);
	else {
		log(`case ${name}: REGRESSED (replay ${r.replayId})`);
		for (const p of r.problems) log(`  - ${p}`);
		process.exitCode = 1;
	}
} catch (e) {
	log(`replay failed: ${(e as Error).message}`);
	process.exitCode = 1;
} finally {
	await disconnectDb();
	if (embedded?.owned) await embedded.stop();
}
