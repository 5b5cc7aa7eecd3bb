import { json } from '@sveltejs/kit';
import { sql } from '$lib/server/db/index';
import { probeReadiness } from '$lib/server/health/readiness';
import type { RequestHandler } from './$types';

/**
 * 200 when ready, else 503 naming the failed checks (see health/readiness.ts). Ready with
 * warnings (background jobs that gave up) is a 200 with status "degraded".
 */
export const GET: RequestHandler = async () => {
	const r = await probeReadiness(sql());
	const status = !r.ready ? 'not ready' : r.warnings.length ? 'degraded' : 'ready';
	return json({ status, failed: r.failed, warnings: r.warnings, checks: r.checks, jobs: r.jobs }, { status: r.ready ? 200 : 503, headers: { 'cache-control': 'no-store' } });
};
