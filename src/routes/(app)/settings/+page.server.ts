import { sql } from '$lib/server/db/index';
import { latestEventId } from '$lib/server/db/queries/events';
import { hostSyncTimes } from '$lib/server/db/queries/entities';
import { listHosts } from '$lib/server/db/queries/hosts';
import { listOperators } from '$lib/server/db/queries/operators';
import { listAllowRules } from '$lib/server/db/queries/allow-rules';
import { listClusterOverviews } from '$lib/server/cluster/overview';
import { hostsFor } from '$lib/server/hosts/manage';
import { notificationSettings } from '$lib/server/notify/settings';
import { modelQualifications } from '$lib/server/qualify/latest';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ locals }) => {
	const user = locals.user!;
	// Read before the clusters: an event after it is one they may not show yet.
	const clustersCursor = await latestEventId(sql());
	return {
		clustersCursor,
		hosts: hostsFor(user.role, await listHosts(sql())),
		/** each host's last inventory read (ISO 8601), for how current it is */
		syncedAt: Object.fromEntries(await hostSyncTimes(sql())),
		clusters: await listClusterOverviews(user.role),
		operators: user.role === 'admin' ? await listOperators(sql()) : [],
		rules: user.role === 'admin' ? await listAllowRules(sql()) : [],
		notifications: user.role === 'admin' ? await notificationSettings(sql()) : null,
		/** each configured model's newest `npm run qualify` (Settings → Model) */
		qualifications: user.role === 'admin' ? await modelQualifications() : []
	};
};
