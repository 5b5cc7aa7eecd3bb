import { filterFromSearch, reviewOverview } from '$lib/server/review';
import { requireAdmin } from '$lib/server/auth/guard';
import type { PageServerLoad } from './$types';

/** The cross-session review; filters are plain GET parameters (?from=YYYY-MM-DD&to=…&outcome=…). */
export const load: PageServerLoad = async ({ url, locals }) => {
	requireAdmin(locals);
	const overview = await reviewOverview(filterFromSearch(url.searchParams));
	return { overview };
};
