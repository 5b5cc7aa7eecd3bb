import { sql } from '$lib/server/db/index';
import { latestEventId } from '$lib/server/db/queries/events';
import { listRecentExecutions } from '$lib/server/executions/store';
import { listOpenQuestions } from '$lib/server/questions/store';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async () => {
	const cursor = await latestEventId(sql());
	const [executions, questions] = await Promise.all([
		listRecentExecutions(sql(), 200),
		listOpenQuestions(sql())
	]);
	return { executions, questions, cursor };
};
