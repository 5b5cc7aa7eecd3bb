import type { TaskList } from 'graphile-worker';

/** Every graphile-worker task Nomos runs, by name (`<domain>__<action>`). */
export const taskList: TaskList = {};

/** Recurring jobs. */
export const crontab = '';
