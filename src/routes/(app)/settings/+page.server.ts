import { sql } from '$lib/server/db/index';
import { listHosts } from '$lib/server/db/queries/hosts';
import { listOperators } from '$lib/server/db/queries/operators';
import { listAllowRules } from '$lib/server/db/queries/allow-rules';
import { hostsFor } from '$lib/server/hosts/manage';
import { notificationSettings } from '$lib/server/notify/settings';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ locals }) => {
	const user = locals.user!;
	return {
		hosts: hostsFor(user.role, await listHosts(sql())),
		operators: user.role === 'admin' ? await listOperators(sql()) : [],
		rules: user.role === 'admin' ? await listAllowRules(sql()) : [],
		notifications: user.role === 'admin' ? await notificationSettings(sql()) : null
	};
};
