import { sql } from '$lib/server/db/index';
import { latestEventId } from '$lib/server/db/queries/events';
import { listRecentExecutions } from '$lib/server/db/queries/executions';
import { listOpenQuestions } from '$lib/server/db/queries/questions';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async () => {
	const cursor = await latestEventId(sql());
	const [executions, questions] = await Promise.all([
		listRecentExecutions(sql(), 200),
		listOpenQuestions(sql())
	]);
	return { executions, questions, cursor };
};
