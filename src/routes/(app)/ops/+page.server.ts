import { sql } from '$lib/server/db/index';
import { latestEventId } from '$lib/server/db/queries/events';
import { listRecentExecutions } from '$lib/server/db/queries/executions';
import { listRecentPlans } from '$lib/server/db/queries/plans';
import { listOpenQuestions } from '$lib/server/db/queries/questions';
import { listGaveUpJobs } from '$lib/server/db/queries/jobs';
import { keepListed } from '$lib/server/access/sessions';
import type { PageServerLoad } from './$types';

// An operator's Ops shows what their own and shared sessions asked for (and what no session did);
// an admin's shows everything (access/sessions.ts keepListed).
export const load: PageServerLoad = async ({ parent, locals }) => {
	// After the layout's load: on a first visit its cursor starts the tab's fleet stream, and the
	// page's must not be older (events between the two would reach neither).
	await parent();
	const cursor = await latestEventId(sql());
	const viewer = locals.user!;
	const [executions, plans, questions, gaveUp] = await Promise.all([
		listRecentExecutions(sql(), 200).then((rows) => keepListed(sql(), viewer, rows, (e) => e.requestedBySession)),
		listRecentPlans(sql()).then((rows) => keepListed(sql(), viewer, rows, (p) => p.sessionId)),
		listOpenQuestions(sql(), viewer),
		listGaveUpJobs(sql())
	]);
	return { executions, plans, questions, gaveUp, cursor };
};
