import { z } from 'zod';
import { fingerprint, hostInput } from '$lib/schemas/hosts';
import { listHosts } from '$lib/server/db/queries/hosts';
import { sql } from '$lib/server/db/index';
import { listClusterOverviews } from '$lib/server/cluster/overview';
import { addHost, changeHost, hostsFor, pinHostKey, removeHost, scanHostKey, testHost } from '$lib/server/hosts/manage';
import { checkGate, gateInstall } from '$lib/server/hosts/gate';
import { enqueueJob, PRIORITY } from '$lib/server/jobs/enqueue';
import { adminProcedure, operatorProcedure, router } from '../t';

const id = z.object({ id: z.uuid() });

export const hostsRouter = router({
	list: operatorProcedure.query(async ({ ctx }) => hostsFor(ctx.user.role, await listHosts(sql()))),
	/** The recorded clusters, each node's standing, load, guests and host entry (none for standalone hosts). */
	clusters: operatorProcedure.query(({ ctx }) => listClusterOverviews(ctx.user.role)),
	create: adminProcedure.input(hostInput).mutation(({ input, ctx }) => addHost(ctx.user, input)),
	update: adminProcedure.input(id.extend({ host: hostInput })).mutation(({ input, ctx }) => changeHost(ctx.user, input.id, input.host)),
	/** Refreshes the inventory of one host (or all) now, in the background. */
	sync: operatorProcedure.input(z.object({ host: z.string().max(63).optional() })).mutation(async ({ input }) => {
		await enqueueJob(sql(), 'inventory__sync', input.host ? { host: input.host } : {}, { queueName: 'inventory', priority: PRIORITY.background });
		return { queued: true };
	}),
	remove: adminProcedure.input(id).mutation(({ input, ctx }) => removeHost(ctx.user, input.id)),
	/** Reads the key the host presents now, without authenticating, so the operator can pin it. */
	scanKey: adminProcedure.input(id).mutation(({ input }) => scanHostKey(input.id)),
	pin: adminProcedure.input(id.extend({ fingerprint })).mutation(({ input, ctx }) => pinHostKey(ctx.user, input.id, input.fingerprint)),
	/** Connects with the pinned key and the configured private key and runs `true`. */
	test: adminProcedure.input(id).mutation(({ input }) => testHost(input.id)),
	/** What to install on a node: the gate files with their sha256 and each host's authorized_keys line. */
	gate: adminProcedure.query(() => gateInstall()),
	/** Asks the host what Nomos's key reaches there: the gate (and whether it fits), a full shell, or unknown. */
	checkGate: adminProcedure.input(id).mutation(({ input }) => checkGate(input.id))
});
