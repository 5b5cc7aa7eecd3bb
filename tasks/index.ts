import type { TaskList } from 'graphile-worker';
import { envSchema } from '../src/lib/server/env';
import { inventory__sync } from './inventory__sync';
import { agent__run_turn } from './agent__run_turn';

/** Every graphile-worker task Nomos runs, by name (`<domain>__<action>`). */
export const taskList: TaskList = {
	inventory__sync,
	agent__run_turn
};

/**
 * NOMOS_INVENTORY_SYNC, read from process.env without caching `env()`: this module is imported
 * before entry points load `.env`, and an invalid value is reported by boot's own `env()` call.
 */
const inventorySync = envSchema.shape.NOMOS_INVENTORY_SYNC.safeParse(process.env.NOMOS_INVENTORY_SYNC);

/**
 * Recurring jobs. The inventory sync runs every minute in its own queue with a job key, so at
 * most one runs and one waits, however long a sync takes.
 */
export const crontab = [
	inventorySync.success && inventorySync.data ? '* * * * * inventory__sync ?jobKey=inventory__sync&queue=inventory' : ''
]
	.filter(Boolean)
	.join('\n');
