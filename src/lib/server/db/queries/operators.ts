import { and, eq, gt, isNull, sql as dsql } from 'drizzle-orm';
import type { TransactionSql } from 'postgres';
import { createHash, randomBytes } from 'node:crypto';
import { db, sql } from '../index';
import { emitEvent } from './events';
import { recordAudit } from './audit';
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
	if (row.disabledAt) return null;
	return { id: row.id, username: row.username, role: row.role };
}

/** Creates a login session; returns the cookie token (only its hash is stored). */
export async function createAuthSession(operatorId: string, days: number): Promise<{ token: string; expiresAt: Date }> {
	const token = randomBytes(32).toString('base64url');
	const expiresAt = new Date(Date.now() + days * 86_400_000);
	await db().insert(authSessions).values({ tokenHash: sha256(token), operatorId, expiresAt });
	return { token, expiresAt };
}

/** The stored form of a session token (what `auth.revoked` events name). */
export const sessionTokenHash = (token: string) => sha256(token);

export async function getOperatorBySessionToken(token: string): Promise<Operator | null> {
	const [row] = await db()
		.select({ id: operators.id, username: operators.username, role: operators.role })
		.from(authSessions)
		.innerJoin(operators, eq(operators.id, authSessions.operatorId))
		.where(and(eq(authSessions.tokenHash, sha256(token)), gt(authSessions.expiresAt, new Date()), isNull(operators.disabledAt)));
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

export type OperatorListing = Operator & { createdAt: string; disabledAt: string | null; activeSessions: number };

export async function listOperators(): Promise<OperatorListing[]> {
	return sql()<OperatorListing[]>`
		select o.id, o.username, o.role, o.created_at::text as "createdAt", o.disabled_at::text as "disabledAt",
			(select count(*)::int from auth_sessions s where s.operator_id = o.id and s.expires_at > now()) as "activeSessions"
		from operators o order by o.created_at`;
}

/** Arbitrary constant: serialises changes that could leave no enabled admin. */
const ADMIN_GUARD_LOCK = 7_140_202_614;

export type AccountError = { error: string; code: 'NOT_FOUND' | 'CONFLICT' | 'BAD_REQUEST' };
type Actor = { id: string; username: string };

/**
 * Ends every sign-in session of an operator at once: the rows go, and an `auth.revoked` event
 * closes the operator's open live streams in every process.
 */
async function revokeSessions(tx: TransactionSql, operatorId: string, keepTokenHash: string | null = null): Promise<void> {
	await tx`delete from auth_sessions where operator_id = ${operatorId} ${keepTokenHash ? tx`and token_hash <> ${keepTokenHash}` : tx``}`;
	await emitEvent(tx, { sessionId: null, type: 'auth.revoked', payload: { operatorId, keep: keepTokenHash } });
}

async function lockedTarget(tx: TransactionSql, id: string) {
	await tx`select pg_advisory_xact_lock(${ADMIN_GUARD_LOCK})`;
	const [row] = await tx<{ id: string; username: string; role: OperatorRole; disabledAt: string | null }[]>`
		select id, username, role, disabled_at as "disabledAt" from operators where id = ${id}`;
	return row ?? null;
}

async function otherEnabledAdmins(tx: TransactionSql, id: string): Promise<number> {
	const [{ n }] = await tx<{ n: number }[]>`select count(*)::int as n from operators where role = 'admin' and disabled_at is null and id <> ${id}`;
	return n;
}

/** An admin creates an account. */
export async function adminCreateOperator(actor: Actor, input: { username: string; password: string; role: OperatorRole }): Promise<Operator | AccountError> {
	const passwordHash = await hashPassword(input.password);
	return sql().begin(async (tx) => {
		const [taken] = await tx`select 1 from operators where lower(username) = lower(${input.username})`;
		if (taken) return { error: `The username "${input.username}" is taken.`, code: 'CONFLICT' as const };
		const [op] = await tx<Operator[]>`
			insert into operators (username, password_hash, role) values (${input.username}, ${passwordHash}, ${input.role})
			returning id, username, role`;
		await recordAudit(tx, { actor, action: 'operator.created', route: 'settings', subjectType: 'operator', subjectId: op.username, detail: { operatorId: op.id, role: op.role } });
		return op;
	});
}

/** Sets a new password for someone else; their sessions end (they sign in with the new one). */
export async function adminResetPassword(actor: Actor, id: string, password: string): Promise<Operator | AccountError> {
	const passwordHash = await hashPassword(password);
	return sql().begin(async (tx) => {
		const t = await lockedTarget(tx, id);
		if (!t) return { error: 'No such operator.', code: 'NOT_FOUND' as const };
		await tx`update operators set password_hash = ${passwordHash} where id = ${id}`;
		await revokeSessions(tx, id);
		await recordAudit(tx, { actor, action: 'operator.password_reset', route: 'settings', subjectType: 'operator', subjectId: t.username, detail: { operatorId: id } });
		return { id: t.id, username: t.username, role: t.role };
	});
}

/** Disables or re-enables an account. The last enabled admin cannot be disabled. */
export async function adminSetDisabled(actor: Actor, id: string, disabled: boolean): Promise<Operator | AccountError> {
	return sql().begin(async (tx) => {
		const t = await lockedTarget(tx, id);
		if (!t) return { error: 'No such operator.', code: 'NOT_FOUND' as const };
		if (disabled && t.role === 'admin' && !t.disabledAt && (await otherEnabledAdmins(tx, id)) === 0) {
			return { error: `${t.username} is the last admin and cannot be disabled; make another admin first.`, code: 'CONFLICT' as const };
		}
		if (disabled === !!t.disabledAt) return { id: t.id, username: t.username, role: t.role };
		await tx`update operators set disabled_at = ${disabled ? tx`now()` : null} where id = ${id}`;
		if (disabled) await revokeSessions(tx, id);
		await recordAudit(tx, { actor, action: disabled ? 'operator.disabled' : 'operator.enabled', route: 'settings', subjectType: 'operator', subjectId: t.username, detail: { operatorId: id } });
		return { id: t.id, username: t.username, role: t.role };
	});
}

/** Changes an account's role. The last enabled admin cannot be demoted. */
export async function adminSetRole(actor: Actor, id: string, role: OperatorRole): Promise<Operator | AccountError> {
	return sql().begin(async (tx) => {
		const t = await lockedTarget(tx, id);
		if (!t) return { error: 'No such operator.', code: 'NOT_FOUND' as const };
		if (t.role === role) return { id: t.id, username: t.username, role: t.role };
		if (t.role === 'admin' && !t.disabledAt && (await otherEnabledAdmins(tx, id)) === 0) {
			return { error: `${t.username} is the last admin and cannot be demoted; make another admin first.`, code: 'CONFLICT' as const };
		}
		await tx`update operators set role = ${role} where id = ${id}`;
		await recordAudit(tx, { actor, action: 'operator.role_changed', route: 'settings', subjectType: 'operator', subjectId: t.username, detail: { operatorId: id, from: t.role, to: role } });
		return { id: t.id, username: t.username, role };
	});
}

/** An operator changes their own password (the current one is required); their other sessions end. */
export async function changeOwnPassword(actor: Actor, currentToken: string | null, current: string, next: string): Promise<true | AccountError> {
	const [row] = await db().select().from(operators).where(eq(operators.id, actor.id));
	if (!row || !(await verifyPassword(row.passwordHash, current))) return { error: 'The current password is wrong.', code: 'BAD_REQUEST' };
	const passwordHash = await hashPassword(next);
	await sql().begin(async (tx) => {
		await tx`update operators set password_hash = ${passwordHash} where id = ${actor.id}`;
		await revokeSessions(tx, actor.id, currentToken ? sha256(currentToken) : null);
		await recordAudit(tx, { actor, action: 'operator.password_changed', route: 'settings', subjectType: 'operator', subjectId: actor.username, detail: { operatorId: actor.id } });
	});
	return true;
}
