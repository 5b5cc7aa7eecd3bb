import { sql } from '$lib/server/db/index';
import { listHosts } from '$lib/server/db/queries/hosts';
import { env } from '$lib/server/env';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async () => {
	const config = env();
	const hosts = await listHosts(sql());
	return {
		model: config.NOMOS_MODEL && config.OPENAI_BASE_URL ? { name: config.NOMOS_MODEL, baseUrl: config.OPENAI_BASE_URL } : null,
		hosts: hosts.map((h) => ({ name: h.name, pinned: h.hostKeyFingerprint !== null }))
	};
};
