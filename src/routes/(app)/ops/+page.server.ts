import { sql } from '$lib/server/db/index';
import { latestEventId } from '$lib/server/db/queries/events';
import { listRecentExecutions } from '$lib/server/db/queries/executions';
import { listRecentPlans } from '$lib/server/db/queries/plans';
import { listOpenQuestions } from '$lib/server/db/queries/questions';
import { listGaveUpJobs } from '$lib/server/db/queries/jobs';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ parent }) => {
	// After the layout's load: on a first visit its cursor starts the tab's fleet stream, and the
	// page's must not be older (events between the two would reach neither).
	await parent();
	const cursor = await latestEventId(sql());
	const [executions, plans, questions, gaveUp] = await Promise.all([
		listRecentExecutions(sql(), 200),
		listRecentPlans(sql()),
		listOpenQuestions(sql()),
		listGaveUpJobs(sql())
	]);
	return { executions, plans, questions, gaveUp, cursor };
};
