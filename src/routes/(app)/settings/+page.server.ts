import { listHosts } from '$lib/server/db/queries/hosts';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async () => ({ hosts: await listHosts() });
