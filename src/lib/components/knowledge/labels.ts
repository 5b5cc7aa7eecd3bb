/** How a note's source is named in the list and in search results. */
export const SOURCE_LABEL: Record<string, string> = { page: 'note', file: 'file', inventory: 'inventory' };

/** Badge colours by note source, plus one for inventory entities in search results. */
export const SOURCE_BADGE: Record<string, string> = {
	page: 'bg-brand-50 text-brand-700 ring-brand-600/20 dark:bg-brand-700/15 dark:text-brand-100 dark:ring-brand-500/30',
	file: 'bg-sky-50 text-sky-700 ring-sky-600/20 dark:bg-sky-500/10 dark:text-sky-300 dark:ring-sky-400/30',
	inventory: 'bg-violet-50 text-violet-700 ring-violet-600/20 dark:bg-violet-500/10 dark:text-violet-300 dark:ring-violet-400/30',
	entity: 'bg-amber-50 text-amber-800 ring-amber-600/20 dark:bg-amber-500/10 dark:text-amber-300 dark:ring-amber-400/30'
};
