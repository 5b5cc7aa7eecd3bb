import { json } from '@sveltejs/kit';
import { liveness } from '$lib/server/health/liveness';
import type { RequestHandler } from './$types';

// `npm start` answers /healthz in server.js already (before the boot); this serves `vite dev`.
export const GET: RequestHandler = () => json(liveness(), { headers: { 'cache-control': 'no-store' } });
