import type { TaskList } from 'graphile-worker';
import { inventory__sync } from './inventory__sync';
import { agent__run_turn } from './agent__run_turn';
import { agent__continue_session } from './agent__continue_session';
import { executions__run } from './executions__run';
import { executions__sweep } from './executions__sweep';
import { events__prune } from './events__prune';

/**
 * Every graphile-worker task Nomos runs, by name (`<domain>__<action>`). The entry points (the
 * web hooks, `npm run worker`) hand this list to boot(); nothing under src/lib/server imports it.
 */
export const taskList: TaskList = {
	inventory__sync,
	agent__run_turn,
	agent__continue_session,
	executions__run,
	executions__sweep,
	events__prune
};
