import { json } from '@sveltejs/kit';
import { sql } from '$lib/server/db/index';
import { probeReadiness, readinessAnswer } from '$lib/server/health/readiness';
import type { RequestHandler } from './$types';

/**
 * 200 when ready, else 503 naming the failed checks (see health/readiness.ts). Ready with
 * warnings (background jobs that gave up) is a 200 with status "degraded".
 */
export const GET: RequestHandler = async () => {
	const { status, body } = readinessAnswer(await probeReadiness(sql()));
	return json(body, { status, headers: { 'cache-control': 'no-store' } });
};
