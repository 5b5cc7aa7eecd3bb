import { reviewOverview } from '$lib/server/review';
import { requireAdmin } from '$lib/server/auth/guard';
import type { PageServerLoad } from './$types';

/** The cross-session review; filters are plain GET parameters (?from=YYYY-MM-DD&to=…&outcome=…). */
export const load: PageServerLoad = async ({ url, locals }) => {
	requireAdmin(locals);
	const q = url.searchParams;
	const outcome = q.get('outcome');
	const overview = await reviewOverview({
		from: q.get('from') ?? undefined,
		to: q.get('to') ?? undefined,
		outcome: outcome === 'reached' || outcome === 'not_reached' ? (outcome) : undefined
	});
	return { overview };
};
