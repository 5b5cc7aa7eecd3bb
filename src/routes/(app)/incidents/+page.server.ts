import { sql } from '$lib/server/db/index';
import { latestEventId } from '$lib/server/db/queries/events';
import { listIncidents } from '$lib/server/db/queries/incidents';
import type { PageServerLoad } from './$types';

// The incidents whose sessions the viewer may read (an operator their own and shared ones'; an
// admin every alert's: access/sessions.ts listedFor), read as of event `cursor`.
export const load: PageServerLoad = async ({ parent, locals }) => {
	await parent();
	const cursor = await latestEventId(sql());
	const incidents = await listIncidents(sql(), locals.user!);
	return { incidents, cursor };
};
