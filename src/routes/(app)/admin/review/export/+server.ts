import { filterFromSearch, renderOverviewMarkdown, reviewOverview } from '$lib/server/review';
import { requireAdmin } from '$lib/server/auth/guard';
import type { RequestHandler } from './$types';

/** The cross-session review as a Markdown file, with the page's filter (same GET parameters). */
export const GET: RequestHandler = async ({ url, locals }) => {
	requireAdmin(locals);
	const overview = await reviewOverview(filterFromSearch(url.searchParams));
	const f = overview.filter;
	const range = [f.from, f.to].filter(Boolean).join('-to-');
	const name = ['review', 'sessions', range, f.outcome?.replace('_', '-')].filter(Boolean).join('-');
	return new Response(renderOverviewMarkdown(overview, url.origin), {
		headers: {
			'content-type': 'text/markdown; charset=utf-8',
			'content-disposition': `attachment; filename="${name}.md"`,
			'cache-control': 'no-store'
		}
	});
};
