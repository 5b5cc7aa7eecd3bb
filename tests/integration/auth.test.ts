import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { createAuthSession, deleteAuthSession, getOperatorBySessionToken, issueSetupToken } from '../../src/lib/server/db/queries/operators';
import { checkCredentials, completeSetup, ensureConfiguredOperator } from '../../src/lib/server/auth/accounts';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();

describe('operators and sessions', () => {
	it('one-time setup creates the first admin once, with a valid token only', async () => {
		const token = await issueSetupToken(sql());
		expect(await completeSetup(sql(), 'wrong-token', 'first', 'correct horse battery')).toBe('invalid-token');
		const op = await completeSetup(sql(), token, 'first', 'correct horse battery');
		expect(op).toMatchObject({ username: 'first', role: 'admin' });
		expect(await completeSetup(sql(), token, 'second', 'correct horse battery')).toBe('already-set-up');
	});

	it('stores only an argon2 hash and checks the password', async () => {
		expect(await ensureConfiguredOperator(sql(), 'admin', 'first-password')).toBe('created');
		const [row] = await sql()<{ passwordHash: string }[]>`select password_hash as "passwordHash" from operators where username = 'admin'`;
		expect(row.passwordHash).toMatch(/^\$argon2id\$/);
		expect(row.passwordHash).not.toContain('first-password');
		expect(await checkCredentials(sql(), 'admin', 'first-password')).toMatchObject({ username: 'admin', role: 'admin' });
		expect(await checkCredentials(sql(), 'admin', 'wrong')).toBeNull();
		expect(await checkCredentials(sql(), 'nobody', 'first-password')).toBeNull();
		expect(await ensureConfiguredOperator(sql(), 'admin', 'first-password')).toBe('unchanged');
		expect(await ensureConfiguredOperator(sql(), 'admin', 'second-password')).toBe('updated');
		expect(await checkCredentials(sql(), 'admin', 'first-password')).toBeNull();
	});

	it('sessions resolve until they expire or are deleted; the token is not stored', async () => {
		const op = (await checkCredentials(sql(), 'admin', 'second-password'))!;
		const { token, expiresAt } = await createAuthSession(sql(), op.id, 1);
		expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
		expect(await getOperatorBySessionToken(sql(), token)).toMatchObject({ id: op.id });
		const rows = await sql()<{ tokenHash: string }[]>`select token_hash as "tokenHash" from auth_sessions`;
		expect(rows.some((r) => r.tokenHash === token)).toBe(false);

		await sql()`update auth_sessions set expires_at = ${new Date(Date.now() - 1000)}`;
		expect(await getOperatorBySessionToken(sql(), token)).toBeNull();

		const second = await createAuthSession(sql(), op.id, 1);
		await deleteAuthSession(sql(), second.token);
		expect(await getOperatorBySessionToken(sql(), second.token)).toBeNull();
	});
});
