import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { db } from '../../src/lib/server/db/index';
import { authSessions, operators } from '../../src/lib/server/db/schema';
import {
	checkCredentials,
	completeSetup,
	createAuthSession,
	deleteAuthSession,
	ensureConfiguredOperator,
	getOperatorBySessionToken,
	issueSetupToken
} from '../../src/lib/server/db/queries/operators';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();

describe('operators and sessions', () => {
	it('one-time setup creates the first admin once, with a valid token only', async () => {
		const token = await issueSetupToken();
		expect(await completeSetup('wrong-token', 'first', 'correct horse battery')).toBe('invalid-token');
		const op = await completeSetup(token, 'first', 'correct horse battery');
		expect(op).toMatchObject({ username: 'first', role: 'admin' });
		expect(await completeSetup(token, 'second', 'correct horse battery')).toBe('already-set-up');
	});

	it('stores only an argon2 hash and checks the password', async () => {
		expect(await ensureConfiguredOperator('admin', 'first-password')).toBe('created');
		const [row] = await db().select().from(operators).where(eq(operators.username, 'admin'));
		expect(row.passwordHash).toMatch(/^\$argon2id\$/);
		expect(row.passwordHash).not.toContain('first-password');
		expect(await checkCredentials('admin', 'first-password')).toMatchObject({ username: 'admin', role: 'admin' });
		expect(await checkCredentials('admin', 'wrong')).toBeNull();
		expect(await checkCredentials('nobody', 'first-password')).toBeNull();
		expect(await ensureConfiguredOperator('admin', 'first-password')).toBe('unchanged');
		expect(await ensureConfiguredOperator('admin', 'second-password')).toBe('updated');
		expect(await checkCredentials('admin', 'first-password')).toBeNull();
	});

	it('sessions resolve until they expire or are deleted; the token is not stored', async () => {
		const op = (await checkCredentials('admin', 'second-password'))!;
		const { token } = await createAuthSession(op.id, 1);
		expect(await getOperatorBySessionToken(token)).toMatchObject({ id: op.id });
		const rows = await db().select().from(authSessions);
		expect(rows.some((r) => r.tokenHash === token)).toBe(false);

		await db().update(authSessions).set({ expiresAt: new Date(Date.now() - 1000) });
		expect(await getOperatorBySessionToken(token)).toBeNull();

		const second = await createAuthSession(op.id, 1);
		await deleteAuthSession(second.token);
		expect(await getOperatorBySessionToken(second.token)).toBeNull();
	});
});
