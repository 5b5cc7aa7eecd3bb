import { error } from '@sveltejs/kit';
import { auditFilter } from '$lib/schemas/audit';
import { requireAdmin } from '$lib/server/auth/guard';
import { sql } from '$lib/server/db/index';
import { listAudit } from '$lib/server/db/queries/audit';
import type { PageServerLoad } from './$types';

/** The audit trail, newest first; filters are GET parameters (?action=&actor=&route=&from=&to=&q=). */
export const load: PageServerLoad = async ({ url, locals }) => {
	requireAdmin(locals);
	const parsed = auditFilter.safeParse(Object.fromEntries([...url.searchParams].filter(([, v]) => v !== '')));
	if (!parsed.success) error(400, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
	return { filter: parsed.data, entries: await listAudit(sql(), parsed.data, 500) };
};
