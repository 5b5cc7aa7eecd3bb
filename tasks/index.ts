import type { Task, TaskList } from 'graphile-worker';

/** A task whose module (and what it imports: the agent, SSH) is loaded when it first runs, not when the process starts. */
const loaders: Array<() => Promise<Task>> = [];
const lazy = (load: () => Promise<Task>): Task => {
	loaders.push(load);
	return async (payload, helpers) => (await load())(payload, helpers);
};

/**
 * Every graphile-worker task Nomos runs, by name (`<domain>__<action>`). The entry points (the
 * web hooks, `npm run worker`) hand this list to boot(); nothing under src/lib/server imports it.
 */
export const taskList: TaskList = {
	inventory__sync: lazy(async () => (await import('./inventory__sync')).inventory__sync),
	agent__run_turn: lazy(async () => (await import('./agent__run_turn')).agent__run_turn),
	agent__continue_session: lazy(async () => (await import('./agent__continue_session')).agent__continue_session),
	executions__run: lazy(async () => (await import('./executions__run')).executions__run),
	plans__advance: lazy(async () => (await import('./plans__advance')).plans__advance),
	executions__sweep: lazy(async () => (await import('./executions__sweep')).executions__sweep),
	events__prune: lazy(async () => (await import('./events__prune')).events__prune),
	review__rebuild_facts: lazy(async () => (await import('./review__rebuild_facts')).review__rebuild_facts),
	notify__webhook: lazy(async () => (await import('./notify__webhook')).notify__webhook),
	schedules__tick: lazy(async () => (await import('./schedules__tick')).schedules__tick),
	replay__run: lazy(async () => (await import('./replay__run')).replay__run),
	sessions__title: lazy(async () => (await import('./sessions__title')).sessions__title),
	alerts__intake: lazy(async () => (await import('./alerts__intake')).alerts__intake)
};

/** Loads every task's module now (boot runs it shortly after the worker started). */
export async function preloadTasks(): Promise<void> {
	await Promise.all(loaders.map((load) => load()));
}
