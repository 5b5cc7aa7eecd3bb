import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { fingerprint, hostInput } from '$lib/schemas/hosts';
import {
	createHost,
	deleteHost,
	getHostById,
	listHosts,
	pinHostFingerprint,
	recordHostCheck,
	updateHost
} from '$lib/server/db/queries/hosts';
import { readHostKey, runOnHost } from '$lib/server/ssh/client';
import { sql } from '$lib/server/db/index';
import { enqueueJob } from '$lib/server/jobs/enqueue';
import { operatorProcedure, router } from '../t';

const id = z.object({ id: z.uuid() });

async function mustGet(hostId: string) {
	const host = await getHostById(hostId);
	if (!host) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such host.' });
	return host;
}

function uniqueViolation(e: unknown): never {
	const err = e as { code?: string; cause?: { code?: string } };
	if (err.code === '23505' || err.cause?.code === '23505') {
		throw new TRPCError({ code: 'CONFLICT', message: 'A host with that name already exists.' });
	}
	throw e;
}

export const hostsRouter = router({
	list: operatorProcedure.query(() => listHosts()),
	create: operatorProcedure.input(hostInput).mutation(({ input }) => createHost(input).catch(uniqueViolation)),
	update: operatorProcedure
		.input(id.extend({ host: hostInput }))
		.mutation(async ({ input }) => {
			const row = await updateHost(input.id, input.host).catch(uniqueViolation);
			if (!row) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such host.' });
			return row;
		}),
	/** Refreshes the inventory of one host (or all) now, in the background. */
	sync: operatorProcedure.input(z.object({ host: z.string().max(63).optional() })).mutation(async ({ input }) => {
		await enqueueJob(sql(), 'inventory__sync', input.host ? { host: input.host } : {}, { queueName: 'inventory' });
		return { queued: true };
	}),
	remove: operatorProcedure.input(id).mutation(({ input }) => deleteHost(input.id)),
	/** Reads the key the host presents now, without authenticating, so the operator can pin it. */
	scanKey: operatorProcedure.input(id).mutation(async ({ input }) => {
		const host = await mustGet(input.id);
		try {
			const seen = await readHostKey(host.address, host.port);
			await recordHostCheck(host.id, seen, null);
			return { fingerprint: seen, matchesPinned: host.hostKeyFingerprint === seen };
		} catch (e) {
			await recordHostCheck(host.id, null, (e as Error).message);
			throw new TRPCError({ code: 'PRECONDITION_FAILED', message: (e as Error).message });
		}
	}),
	pin: operatorProcedure.input(id.extend({ fingerprint })).mutation(async ({ input }) => {
		const row = await pinHostFingerprint(input.id, input.fingerprint);
		if (!row) {
			throw new TRPCError({ code: 'CONFLICT', message: 'That is not the fingerprint the host last presented; scan again.' });
		}
		return row;
	}),
	/** Connects with the pinned key and the configured private key and runs `true`. */
	test: operatorProcedure.input(id).mutation(async ({ input }) => {
		const host = await mustGet(input.id);
		try {
			const r = await runOnHost(host, ['true'], { timeoutMs: 10_000 });
			await recordHostCheck(host.id, host.hostKeyFingerprint, null);
			return { ok: r.exitCode === 0, message: `Connected as ${host.username}, ran a command in ${r.durationMs} ms.` };
		} catch (e) {
			await recordHostCheck(host.id, host.seenFingerprint, (e as Error).message);
			return { ok: false, message: (e as Error).message };
		}
	})
});
