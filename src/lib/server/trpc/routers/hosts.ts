import { TRPCError } from '@trpc/server';
import type { TransactionSql } from 'postgres';
import { z } from 'zod';
import { fingerprint, hostInput } from '$lib/schemas/hosts';
import {
	createHost,
	deleteHost,
	getHostById,
	listHosts,
	lockHost,
	pinHostFingerprint,
	recordHostCheck,
	updateHost
} from '$lib/server/db/queries/hosts';
import { readHostKey, runOnHost, SshError } from '$lib/server/ssh/client';
import { sql } from '$lib/server/db/index';
import { enqueueJob, PRIORITY } from '$lib/server/jobs/enqueue';
import { recordAudit } from '$lib/server/db/queries/audit';
import { adminProcedure, operatorProcedure, router } from '../t';

const id = z.object({ id: z.uuid() });

async function mustGet(hostId: string) {
	const host = await getHostById(sql(), hostId);
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

type Actor = { id: string; username: string };

/** Host and SSH-key changes go to the audit trail (who, what, which host), in the change's own transaction. */
function audit(tx: TransactionSql, actor: Actor, action: string, host: { id: string; name: string }, detail: Record<string, unknown> = {}) {
	return recordAudit(tx, { actor, action: `host.${action}`, route: 'settings', subjectType: 'host', subjectId: host.name, detail: { hostId: host.id, ...detail } });
}

const hostDetail = (h: { address: string; port: number; username: string; keyPath: string }) => ({ address: h.address, port: h.port, user: h.username, keyPath: h.keyPath });

/** Everyone sees the hosts; only admins see where the private keys live. */
export function hostsFor(role: string, hosts: Awaited<ReturnType<typeof listHosts>>) {
	return role === 'admin' ? hosts : hosts.map((h) => ({ ...h, keyPath: '' }));
}

export const hostsRouter = router({
	list: operatorProcedure.query(async ({ ctx }) => hostsFor(ctx.user.role, await listHosts(sql()))),
	create: adminProcedure.input(hostInput).mutation(async ({ input, ctx }) => {
		return sql()
			.begin(async (tx) => {
				const row = await createHost(tx, input);
				await audit(tx, ctx.user, 'created', row, hostDetail(row));
				return row;
			})
			.catch(uniqueViolation);
	}),
	update: adminProcedure
		.input(id.extend({ host: hostInput }))
		.mutation(async ({ input, ctx }) => {
			const row = await sql()
				.begin(async (tx) => {
					const row = await updateHost(tx, input.id, input.host);
					if (row) await audit(tx, ctx.user, 'updated', row, hostDetail(row));
					return row;
				})
				.catch(uniqueViolation);
			if (!row) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such host.' });
			return row;
		}),
	/** Refreshes the inventory of one host (or all) now, in the background. */
	sync: operatorProcedure.input(z.object({ host: z.string().max(63).optional() })).mutation(async ({ input }) => {
		await enqueueJob(sql(), 'inventory__sync', input.host ? { host: input.host } : {}, { queueName: 'inventory', priority: PRIORITY.background });
		return { queued: true };
	}),
	remove: adminProcedure.input(id).mutation(async ({ input, ctx }) => {
		await sql().begin(async (tx) => {
			// Locked and read in the transaction: of two removes at once, only the one that removed it is audited.
			const host = await lockHost(tx, input.id);
			if (!host || !(await deleteHost(tx, input.id))) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such host.' });
			await audit(tx, ctx.user, 'removed', host, hostDetail(host));
		});
	}),
	/** Reads the key the host presents now, without authenticating, so the operator can pin it. */
	scanKey: adminProcedure.input(id).mutation(async ({ input }) => {
		const host = await mustGet(input.id);
		try {
			const seen = await readHostKey(host.address, host.port);
			await recordHostCheck(sql(), host.id, seen, null);
			return { fingerprint: seen, matchesPinned: host.hostKeyFingerprint === seen };
		} catch (e) {
			await recordHostCheck(sql(), host.id, null, (e as Error).message);
			throw new TRPCError({ code: 'PRECONDITION_FAILED', message: (e as Error).message });
		}
	}),
	pin: adminProcedure.input(id.extend({ fingerprint })).mutation(async ({ input, ctx }) => {
		const row = await sql().begin(async (tx) => {
			const before = await lockHost(tx, input.id);
			if (!before) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such host.' });
			const row = await pinHostFingerprint(tx, input.id, input.fingerprint);
			if (row) await audit(tx, ctx.user, 'key_pinned', row, { fingerprint: input.fingerprint, previous: before.hostKeyFingerprint });
			return row;
		});
		if (!row) {
			throw new TRPCError({ code: 'CONFLICT', message: 'That is not the fingerprint the host last presented; scan again.' });
		}
		return row;
	}),
	/** Connects with the pinned key and the configured private key and runs `true`. */
	test: adminProcedure.input(id).mutation(async ({ input }) => {
		const host = await mustGet(input.id);
		try {
			const r = await runOnHost(host, ['true'], { timeoutMs: 10_000 });
			await recordHostCheck(sql(), host.id, host.hostKeyFingerprint, null);
			return { ok: r.exitCode === 0, message: `Connected as ${host.username}, ran a command in ${r.durationMs} ms.` };
		} catch (e) {
			const message = e instanceof SshError && e.localDetail ? e.localDetail : (e as Error).message;
			await recordHostCheck(sql(), host.id, host.seenFingerprint, message);
			return { ok: false, message };
		}
	})
});
