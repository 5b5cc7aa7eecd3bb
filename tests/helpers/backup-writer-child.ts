// A steady writer for the backup tests: commits, as fast as it can until SIGTERM, one event and
// one audit entry with the same tag in each transaction (the event's `by`) (the app's own queries), so a backup
// taken meanwhile must hold both rows of a tag or neither.
import { connectDb, disconnectDb, sql } from '../../src/lib/server/db/index';
import { recordAudit } from '../../src/lib/server/db/queries/audit';
import { emitEvent } from '../../src/lib/server/db/queries/events';

connectDb(process.env.DATABASE_URL!, { max: 2 });
let stop = false;
process.once('SIGTERM', () => (stop = true));
let n = 0;
while (!stop) {
	const tag = `w${n}`;
	await sql().begin(async (tx) => {
		await emitEvent(tx, { type: 'assent.updated', payload: { open: true, by: tag } });
		await recordAudit(tx, { actor: null, action: 'backup.test', route: 'system', detail: { tag } });
	});
	if (++n === 1) console.log('writing');
}
console.log(`wrote ${n}`);
await disconnectDb();
