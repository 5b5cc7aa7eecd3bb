import { and, eq, gt, sql as dsql } from 'drizzle-orm';
import { createHash, randomBytes } from 'node:crypto';
import { db } from '../index';
import { authSessions, operators, settings, type OperatorRole } from '../schema';
import { hashPassword, verifyPassword } from '../../auth/password';

export type Operator = { id: string; username: string; role: OperatorRole };

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export async function countOperators(): Promise<number> {
	const [row] = await db().select({ n: dsql<number>`count(*)::int` }).from(operators);
	return row.n;
}

export async function createOperator(username: string, password: string, role: OperatorRole): Promise<Operator> {
	const [row] = await db()
		.insert(operators)
		.values({ username, passwordHash: await hashPassword(password), role })
		.returning({ id: operators.id, username: operators.username, role: operators.role });
	return row;
}

/**
 * Makes sure the configured first operator exists (role admin) and that its password is the
 * configured one; a changed NOMOS_OPERATOR_PASSWORD re-hashes it.
 */
export async function ensureConfiguredOperator(username: string, password: string): Promise<'created' | 'updated' | 'unchanged'> {
	const [existing] = await db().select().from(operators).where(eq(operators.username, username));
	if (!existing) {
		await db()
			.insert(operators)
			.values({ username, passwordHash: await hashPassword(password), role: 'admin' })
			.onConflictDoNothing();
		return 'created';
	}
	if (await verifyPassword(existing.passwordHash, password)) return 'unchanged';
	await db()
		.update(operators)
		.set({ passwordHash: await hashPassword(password) })
		.where(eq(operators.id, existing.id));
	return 'updated';
}

let dummyHash: Promise<string> | undefined;

export async function checkCredentials(username: string, password: string): Promise<Operator | null> {
	const [row] = await db().select().from(operators).where(eq(operators.username, username));
	if (!row) {
		// Same work as a real check so timing does not reveal which usernames exist.
		dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
		await verifyPassword(await dummyHash, password);
		return null;
	}
	if (!(await verifyPassword(row.passwordHash, password))) return null;
	return { id: row.id, username: row.username, role: row.role };
}

/** Creates a login session; returns the cookie token (only its hash is stored). */
export async function createAuthSession(operatorId: string, days: number): Promise<{ token: string; expiresAt: Date }> {
	const token = randomBytes(32).toString('base64url');
	const expiresAt = new Date(Date.now() + days * 86_400_000);
	await db().insert(authSessions).values({ tokenHash: sha256(token), operatorId, expiresAt });
	return { token, expiresAt };
}

export async function getOperatorBySessionToken(token: string): Promise<Operator | null> {
	const [row] = await db()
		.select({ id: operators.id, username: operators.username, role: operators.role })
		.from(authSessions)
		.innerJoin(operators, eq(operators.id, authSessions.operatorId))
		.where(and(eq(authSessions.tokenHash, sha256(token)), gt(authSessions.expiresAt, new Date())));
	return row ?? null;
}

export async function deleteAuthSession(token: string): Promise<void> {
	await db().delete(authSessions).where(eq(authSessions.tokenHash, sha256(token)));
}

const SETUP_KEY = 'setup_token';

/** Issues a fresh one-time setup token (valid 24 h) and returns it; only its hash is stored. */
export async function issueSetupToken(): Promise<string> {
	const token = randomBytes(24).toString('base64url');
	const value = { hash: sha256(token), expiresAt: Date.now() + 86_400_000 };
	await db()
		.insert(settings)
		.values({ key: SETUP_KEY, value })
		.onConflictDoUpdate({ target: settings.key, set: { value, updatedAt: new Date() } });
	return token;
}

/**
 * Creates the first operator (admin) with a valid setup token; the token is consumed in the
 * same transaction, and nothing happens once any operator exists.
 */
export async function completeSetup(token: string, username: string, password: string): Promise<Operator | 'invalid-token' | 'already-set-up'> {
	const passwordHash = await hashPassword(password);
	return db().transaction(async (tx) => {
		await tx.execute(dsql`select pg_advisory_xact_lock(7140202612)`);
		const [{ n }] = await tx.select({ n: dsql<number>`count(*)::int` }).from(operators);
		if (n > 0) return 'already-set-up' as const;
		const [row] = await tx.select().from(settings).where(eq(settings.key, SETUP_KEY));
		const v = row?.value as { hash?: string; expiresAt?: number } | undefined;
		if (!v?.hash || v.hash !== sha256(token) || (v.expiresAt ?? 0) < Date.now()) return 'invalid-token' as const;
		await tx.delete(settings).where(eq(settings.key, SETUP_KEY));
		const [op] = await tx
			.insert(operators)
			.values({ username, passwordHash, role: 'admin' })
			.returning({ id: operators.id, username: operators.username, role: operators.role });
		return op;
	});
}
