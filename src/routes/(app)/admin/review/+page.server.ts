import { listSessions } from '$lib/server/db/queries/sessions';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async () => ({ sessions: await listSessions(500) });
