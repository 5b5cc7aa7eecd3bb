import postgres from 'postgres';
import { startEmbeddedPostgres } from '/work/wt-chaos/src/lib/server/db/embedded';
const pg = await startEmbeddedPostgres({ dataDir: process.argv[2], port: 45999 });
const db = postgres(pg.url, { max: 1, onnotice: () => undefined });
try {
	for (const q of process.argv.slice(3)) console.log(JSON.stringify(await db.unsafe(q), null, 1).slice(0, 6000));
} finally {
	await db.end();
	await pg.stop();
}
