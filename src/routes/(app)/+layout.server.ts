import { listSessions } from '$lib/server/db/queries/sessions';
import type { LayoutServerLoad } from './$types';

export const load: LayoutServerLoad = async ({ locals }) => {
	return { user: locals.user!, sessions: await listSessions() };
};
