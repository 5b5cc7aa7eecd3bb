import { json } from '@sveltejs/kit';
import { sql } from '$lib/server/db/index';
import { probeReadiness } from '$lib/server/health/readiness';
import type { RequestHandler } from './$types';

/** 200 when ready, else 503 naming the failed checks (see health/readiness.ts). */
export const GET: RequestHandler = async () => {
	const r = await probeReadiness(sql());
	return json({ status: r.ready ? 'ready' : 'not ready', failed: r.failed, checks: r.checks }, { status: r.ready ? 200 : 503, headers: { 'cache-control': 'no-store' } });
};
