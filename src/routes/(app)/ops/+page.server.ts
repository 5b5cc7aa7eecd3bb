import { desc } from 'drizzle-orm';
import { db } from '$lib/server/db/index';
import { executions } from '$lib/server/db/schema';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async () => ({
	executions: await db().select().from(executions).orderBy(desc(executions.createdAt)).limit(100)
});
