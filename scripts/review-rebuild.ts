// `npm run review:rebuild`: recomputes the session review's stored facts (message_facts,
// session_facts) from every message, in batches, and prints what it did. The worker does the
// same by itself when the review's rules change (task review__rebuild_facts); this is for doing
// it now, or after writing messages by hand. Uses DATABASE_URL, else the embedded Postgres in
// NOMOS_DATA_DIR (started if Nomos is not running), like `npm start`.
import { performance } from 'node:perf_hooks';
import { openScriptDb, type ScriptDb } from './script-db';

const { rebuildReviewFacts } = await import('../src/lib/server/review/rebuild');

const log = (s: string) => process.stdout.write(s + '\n');
let db: ScriptDb | undefined;
try {
	db = await openScriptDb();
	log(`rebuilding the review facts (${db.where})…`);
	const t0 = performance.now();
	let shown = 0;
	const r = await rebuildReviewFacts({
		wait: true,
		onBatch: (done) => {
			if (performance.now() - shown < 2000) return;
			shown = performance.now();
			log(`  ${done.sessions} sessions, ${done.messages} messages…`);
		}
	});
	if (!r) throw new Error('another rebuild held the lock and this one did not run');
	log(`rebuilt the facts of ${r.messages} messages in ${r.sessions} sessions in ${((performance.now() - t0) / 1000).toFixed(1)} s (version ${r.version})`);
} catch (e) {
	log(`review:rebuild failed: ${(e as Error).message}`);
	process.exitCode = 1;
} finally {
	await db?.close();
}
