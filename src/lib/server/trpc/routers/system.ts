import { sql } from '$lib/server/db/index';
import { countLiveWorkers } from '$lib/server/db/queries/workers';
import { operatorProcedure, router } from '../t';

/** Facts about Nomos itself that pages show (e.g. whether any worker runs). */
export const systemRouter = router({
	workers: operatorProcedure.query(async () => ({ alive: await countLiveWorkers(sql()) }))
});
