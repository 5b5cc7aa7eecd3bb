/** Display names, colours and formats for findings (shared: the review pages and the Markdown export use them; mirrors rules.ts). */

export const KIND_LABEL: Record<string, string> = {
	missing_capability: 'Missing capability',
	silent_failure: 'Silent failure',
	n_plus_one: 'N+1 tool calls',
	operator_as_event_loop: 'Operator as event loop',
	stall: 'Stall',
	goal_outcome: 'Goal outcome'
};

/** Mid-tone colours that read on white and on zinc-950 alike. */
export const KIND_COLOR: Record<string, string> = {
	missing_capability: '#ef4444',
	silent_failure: '#f97316',
	n_plus_one: '#eab308',
	operator_as_event_loop: '#0ea5e9',
	stall: '#8b5cf6',
	goal_outcome: '#71717a'
};

export const SEVERITY_CLASS: Record<string, string> = {
	high: 'bg-red-100 text-red-800 ring-red-200 dark:bg-red-950 dark:text-red-300 dark:ring-red-900',
	medium: 'bg-amber-100 text-amber-800 ring-amber-200 dark:bg-amber-950 dark:text-amber-300 dark:ring-amber-900',
	low: 'bg-zinc-100 text-zinc-700 ring-zinc-200 dark:bg-zinc-800 dark:text-zinc-300 dark:ring-zinc-700'
};

export const CHART_TEAL = '#14b8a6';
export const CHART_RED = '#ef4444';

// Durations and dates are worded in one place for every page and export.
export { formatDuration, formatWhen } from '../format/time';
