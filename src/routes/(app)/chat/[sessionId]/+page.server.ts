import { error } from '@sveltejs/kit';
import { z } from 'zod';
import { sql } from '$lib/server/db/index';
import { latestEventId } from '$lib/server/db/queries/events';
import { listMessages } from '$lib/server/conversation/messages';
import { getSession } from '$lib/server/db/queries/sessions';
import { activeWindow } from '$lib/server/db/queries/assent-windows';
import { listSessionPlans } from '$lib/server/db/queries/plans';
import { listSessionExecutions } from '$lib/server/db/queries/executions';
import { listSessionQuestions } from '$lib/server/db/queries/questions';
import { env } from '$lib/server/env';
import { configuredModels } from '$lib/server/agent/provider';
import { groupMutedUntil } from '$lib/server/db/queries/watches';
import { sessionAccess } from '$lib/server/access/sessions';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params, locals }) => {
	const id = z.uuid().safeParse(params.sessionId);
	if (!id.success) error(404, 'No such chat session.');
	// The cursor is read before the state: anything that changes afterwards is replayed over SSE.
	const cursor = await latestEventId(sql());
	const session = await getSession(sql(), id.data);
	// A deleted session is gone for operators (the admin review still shows it).
	if (!session || session.deletedAt) error(404, 'No such chat session.');
	// Another operator's session, not shared: the same 404 as one that does not exist (access/sessions.ts).
	const access = await sessionAccess(sql(), id.data, locals.user!);
	if (!access) error(404, 'This chat is not yours: it belongs to another operator and is not shared with you.');
	const [messages, executions, plans, window, questions, alertMutedUntil] = await Promise.all([
		listMessages(sql(), id.data),
		listSessionExecutions(sql(), id.data),
		listSessionPlans(sql(), id.data),
		activeWindow(sql(), id.data),
		listSessionQuestions(sql(), id.data),
		groupMutedUntil(sql(), id.data)
	]);
	return {
		session,
		access,
		messages,
		executions,
		plans,
		window,
		questions,
		alertMutedUntil,
		cursor,
		prices: env().NOMOS_PRICES ?? null,
		models: configuredModels()
	};
};
