import { randomBytes } from 'node:crypto';
import type { Sql, TransactionSql } from '../db/index';
import {
	adminCreateOperator as insertByAdmin,
	adminResetPassword as resetHash,
	changeOwnPasswordHash,
	completeSetup as completeSetupWithHash,
	credentialsByUsername,
	insertConfiguredOperator,
	insertOperator,
	setPasswordHash,
	type AccountError,
	type Actor,
	type Operator
} from '../db/queries/operators';
import type { OperatorRole } from '../db/schema';
import { hashPassword, verifyPassword } from './password';
import { confirmOwnPassword, type PasswordRefusal } from './step-up';

// Account operations that handle passwords: hashing and verifying happen here, the queries in
// db/queries/operators.ts only ever see hashes.

export async function createOperator(sql: Sql | TransactionSql, username: string, password: string, role: OperatorRole): Promise<Operator> {
	return insertOperator(sql, username, await hashPassword(password), role);
}

/**
 * Makes sure the configured first operator exists (role admin) and that its password is the
 * configured one; a changed NOMOS_OPERATOR_PASSWORD re-hashes it.
 */
export async function ensureConfiguredOperator(sql: Sql | TransactionSql, username: string, password: string): Promise<'created' | 'updated' | 'unchanged'> {
	const existing = await credentialsByUsername(sql, username);
	if (!existing) {
		await insertConfiguredOperator(sql, username, await hashPassword(password));
		return 'created';
	}
	if (await verifyPassword(existing.passwordHash, password)) return 'unchanged';
	await setPasswordHash(sql, existing.id, await hashPassword(password));
	return 'updated';
}

let dummyHash: Promise<string> | undefined;

/** The operator these credentials sign in, or null (wrong name, wrong password, or disabled). */
export async function checkCredentials(sql: Sql | TransactionSql, username: string, password: string): Promise<Operator | null> {
	const row = await credentialsByUsername(sql, username);
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

/**
 * Creates the first operator (admin) with a valid setup token; the token is consumed in the
 * same transaction, and nothing happens once any operator exists.
 */
export async function completeSetup(sql: Sql, token: string, username: string, password: string): Promise<Operator | 'invalid-token' | 'already-set-up'> {
	return completeSetupWithHash(sql, token, username, await hashPassword(password));
}

/** An admin creates an account. */
export async function adminCreateOperator(
	sql: Sql,
	actor: Actor,
	input: { username: string; password: string; role: OperatorRole }
): Promise<Operator | AccountError> {
	return insertByAdmin(sql, actor, { username: input.username, passwordHash: await hashPassword(input.password), role: input.role });
}

/** Sets a new password for someone else; their sessions end and their API tokens are revoked (they sign in with the new one). */
export async function adminResetPassword(sql: Sql, actor: Actor, id: string, password: string): Promise<Operator | AccountError> {
	return resetHash(sql, actor, id, await hashPassword(password));
}

/**
 * An operator changes their own password (the current one is required); their other sessions
 * end and their API tokens are revoked. Returns how many tokens were revoked.
 */
export async function changeOwnPassword(
	sql: Sql,
	actor: Actor,
	s: { currentToken: string | null; address: string },
	current: string,
	next: string
): Promise<{ revokedTokens: number } | AccountError | PasswordRefusal> {
	const c = await confirmOwnPassword(sql, actor, current, s.address);
	if (!c.ok) return c.code === 'BAD_REQUEST' ? { error: 'The current password is wrong.', code: 'BAD_REQUEST' } : c;
	return { revokedTokens: await changeOwnPasswordHash(sql, actor, s.currentToken, await hashPassword(next)) };
}
