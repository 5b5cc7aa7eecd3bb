// `npm run replay -- <case>`: replays a saved regression case (Admin → Review → a session →
// Replay → Save as a case) against the model configured now (OPENAI_BASE_URL, NOMOS_MODEL…),
// prints the saved figures beside the new ones and exits 1 when the case regressed (more operator
// actions, a finding back, the goal not reached). Nothing runs on a host. Uses DATABASE_URL, else
// the embedded Postgres in NOMOS_DATA_DIR (started if Nomos is not running), like `npm start`.
import { openScriptDb, type ScriptDb } from './script-db';

const { runReplayCase } = await import('../src/lib/server/replay/cases');
const { formatComparison } = await import('../src/lib/server/replay/compare');

const log = (s: string) => process.stdout.write(s + '\n');
const name = process.argv[2];
if (!name) {
	log('usage: npm run replay -- <case name or id>');
	process.exit(2);
}
let db: ScriptDb | undefined;
try {
	db = await openScriptDb();
	log(`replaying case ${name} against ${db.model ?? 'no model'}…`);
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
	await db?.close();
}
