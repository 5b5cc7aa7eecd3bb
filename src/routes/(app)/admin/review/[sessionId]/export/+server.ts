import { error } from '@sveltejs/kit';
import { z } from 'zod';
import { renderReviewMarkdown, reviewSession } from '$lib/server/review';
import { requireAdmin } from '$lib/server/auth/guard';
import type { RequestHandler } from './$types';

/** The review as a Markdown file, for a plan document. */
export const GET: RequestHandler = async ({ params, locals }) => {
	requireAdmin(locals);
	const id = z.uuid().safeParse(params.sessionId);
	if (!id.success) error(404, 'No such chat session.');
	const review = await reviewSession(id.data);
	if (!review) error(404, 'No such chat session.');
	const slug =
		review.session.title
			.toLowerCase()
			.replace(/[^a-z0-9]+/g, '-')
			.replace(/^-+|-+$/g, '')
			.slice(0, 40)
			.replace(/-+$/, '') || 'session';
	return new Response(renderReviewMarkdown(review), {
		headers: {
			'content-type': 'text/markdown; charset=utf-8',
			'content-disposition': `attachment; filename="review-${slug}-${id.data.slice(0, 8)}.md"`,
			'cache-control': 'no-store'
		}
	});
};
