import { sql } from '$lib/server/db/index';
import { countLiveWorkers } from '$lib/server/db/queries/workers';
import { checkModel } from '$lib/server/agent/model-check';
import { adminProcedure, operatorProcedure, router } from '../t';

/** Facts about Nomos itself that pages show (e.g. whether any worker runs). */
export const systemRouter = router({
	workers: operatorProcedure.query(async () => ({ alive: await countLiveWorkers(sql()) })),
	/** Lists the model server's models and runs four tiny tool-call probes (spends a few tokens). */
	checkModel: adminProcedure.mutation(() => checkModel({ probe: true }))
});
