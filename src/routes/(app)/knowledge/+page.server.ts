import { sql } from '$lib/server/db/index';
import { listKnowledge } from '$lib/server/db/queries/knowledge';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async () => ({ notes: await listKnowledge(sql()) });
