import { sql } from '$lib/server/db/index';
import { latestEventId } from '$lib/server/db/queries/events';
import { listSessions } from '$lib/server/db/queries/sessions';
import { countLiveWorkers } from '$lib/server/db/queries/workers';
import type { LayoutServerLoad } from './$types';

export const load: LayoutServerLoad = async ({ locals }) => {
	// Read before the state it covers; later changes are replayed over SSE.
	const cursor = await latestEventId(sql());
	return { user: locals.user!, sessions: await listSessions(sql(), locals.user!), cursor, workersAlive: await countLiveWorkers(sql()) };
};
