import { error } from '@sveltejs/kit';
import { z } from 'zod';
import { getModel } from '$lib/server/agent/provider';
import { reviewSession } from '$lib/server/review';
import { requireAdmin } from '$lib/server/auth/guard';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params, locals }) => {
	requireAdmin(locals);
	const id = z.uuid().safeParse(params.sessionId);
	if (!id.success) error(404, 'No such chat session.');
	const review = await reviewSession(id.data);
	if (!review) error(404, 'No such chat session.');
	// The narrative is optional: offered only when a model is configured.
	return { review, hasModel: getModel() !== null };
};
