// Runs the app's migrator in its own process: `tsx tests/helpers/migrate-child.ts <url>`.
import { runMigrations } from '../../src/lib/server/db/migrate';

await runMigrations(process.argv[2]);
console.log('migrated');
