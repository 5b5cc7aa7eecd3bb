import { and, asc, eq, or, sql as dsql } from 'drizzle-orm';
import { db } from '../index';
import { entities, hosts } from '../schema';
import type { HostConfig } from '../../env';

export type Host = typeof hosts.$inferSelect;

export async function listHosts(): Promise<Host[]> {
	return db().select().from(hosts).orderBy(asc(hosts.name));
}

export async function getHostByName(name: string): Promise<Host | null> {
	const [row] = await db().select().from(hosts).where(eq(hosts.name, name));
	return row ?? null;
}

export async function getHostById(id: string): Promise<Host | null> {
	const [row] = await db().select().from(hosts).where(eq(hosts.id, id));
	return row ?? null;
}

/** Upserts the hosts from NOMOS_HOSTS; a configured fingerprint pins the host. */
export async function upsertConfiguredHosts(list: HostConfig[]): Promise<void> {
	for (const h of list) {
		const values = {
			name: h.name,
			address: h.address,
			port: h.port,
			username: h.user,
			keyPath: h.keyPath,
			source: 'config' as const,
			updatedAt: new Date(),
			...(h.hostKeyFingerprint ? { hostKeyFingerprint: h.hostKeyFingerprint } : {})
		};
		await db().insert(hosts).values(values).onConflictDoUpdate({ target: hosts.name, set: values });
	}
}

export type HostInput = { name: string; address: string; port: number; username: string; keyPath: string };

export async function createHost(input: HostInput): Promise<Host> {
	const [row] = await db().insert(hosts).values({ ...input, source: 'ui' }).returning();
	return row;
}

/** Editing the address or port unpins the key: a different machine must be re-confirmed. */
export async function updateHost(id: string, input: HostInput): Promise<Host | null> {
	const [row] = await db()
		.update(hosts)
		.set({
			...input,
			updatedAt: new Date(),
			hostKeyFingerprint: dsql`case when ${hosts.address} = ${input.address} and ${hosts.port} = ${input.port} then ${hosts.hostKeyFingerprint} else null end`
		})
		.where(eq(hosts.id, id))
		.returning();
	return row ?? null;
}

/** Removes a host and everything the inventory knew about it (its containers are not "present" anymore). */
export async function deleteHost(id: string): Promise<void> {
	await db().transaction(async (tx) => {
		const [gone] = await tx.delete(hosts).where(eq(hosts.id, id)).returning({ name: hosts.name });
		if (gone) await tx.delete(entities).where(or(eq(entities.hostName, gone.name), and(eq(entities.kind, 'host'), eq(entities.externalId, gone.name))));
	});
}

export async function recordHostCheck(id: string, seenFingerprint: string | null, error: string | null): Promise<void> {
	await db()
		.update(hosts)
		.set({ seenFingerprint, lastError: error, lastCheckedAt: new Date() })
		.where(eq(hosts.id, id));
}

/** Pins exactly the fingerprint the operator confirmed (it must be the one last seen). */
export async function pinHostFingerprint(id: string, fingerprint: string): Promise<Host | null> {
	const [row] = await db()
		.update(hosts)
		.set({ hostKeyFingerprint: fingerprint, updatedAt: new Date() })
		.where(dsql`${hosts.id} = ${id} and ${hosts.seenFingerprint} = ${fingerprint}`)
		.returning();
	return row ?? null;
}
