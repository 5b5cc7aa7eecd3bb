import type { TaskList } from 'graphile-worker';
import { inventory__sync } from './inventory__sync';
import { agent__run_turn } from './agent__run_turn';
import { agent__continue_session } from './agent__continue_session';
import { executions__run } from './executions__run';
import { executions__sweep } from './executions__sweep';
import { events__prune } from './events__prune';

/** Every graphile-worker task Nomos runs, by name (`<domain>__<action>`). */
export const taskList: TaskList = {
	inventory__sync,
	agent__run_turn,
	agent__continue_session,
	executions__run,
	executions__sweep,
	events__prune
};

/**
 * Recurring jobs. The inventory sync runs every minute in its own queue with a job key, so at
 * most one runs and one waits, however long a sync takes.
 */
export function crontab(opts: { inventorySync: boolean }): string {
	return [opts.inventorySync ? '* * * * * inventory__sync ?jobKey=inventory__sync&queue=inventory' : '', '17 * * * * events__prune ?jobKey=events__prune']
		.filter(Boolean)
		.join('\n');
}
