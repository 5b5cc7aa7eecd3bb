import { error, fail, redirect } from '@sveltejs/kit';
import { z } from 'zod';
import { getModel } from '$lib/server/agent/provider';
import { reviewSession } from '$lib/server/review';
import { requireAdmin } from '$lib/server/auth/guard';
import { sql } from '$lib/server/db/index';
import { listReplaysOf } from '$lib/server/db/queries/replays';
import { startReplay } from '$lib/server/replay/run';
import { Refusal } from '$lib/server/refusal';
import { replayState } from '$lib/schemas/replay';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params, locals }) => {
	requireAdmin(locals);
	const id = z.uuid().safeParse(params.sessionId);
	if (!id.success) error(404, 'No such chat session.');
	const review = await reviewSession(id.data);
	if (!review) error(404, 'No such chat session.');
	const replays = (await listReplaysOf(sql(), id.data)).map((r) => ({ id: r.id, createdAt: r.createdAt, status: replayState.parse(r.replay).status }));
	// The narrative and a replay are optional: offered only when a model is configured.
	return { review, hasModel: getModel() !== null, replays };
};

export const actions: Actions = {
	replay: async ({ params, locals, request }) => {
		const user = requireAdmin(locals);
		const id = z.uuid().safeParse(params.sessionId);
		if (!id.success) error(404, 'No such chat session.');
		const form = await request.formData();
		const live = z
			.enum(['on'])
			.optional()
			.safeParse(form.get('live') ?? undefined);
		let replayId: string;
		try {
			replayId = await startReplay({ originalId: id.data, operatorId: user.id, live: live.success && live.data === 'on' });
		} catch (e) {
			if (e instanceof Refusal) return fail(e.code === 'NOT_FOUND' ? 404 : 400, { replayError: e.message });
			throw e;
		}
		redirect(303, `/admin/review/${id.data}/replay/${replayId}`);
	}
};
