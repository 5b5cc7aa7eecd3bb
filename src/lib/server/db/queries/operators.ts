import type { TransactionSql } from 'postgres';
import { createHash, randomBytes } from 'node:crypto';
import type { Sql } from '../index';
import { emitEvent } from './events';
import { recordAudit } from './audit';
import type { OperatorRole, operators } from '../schema';

type OperatorColumns = typeof operators.$inferSelect;

export type Operator = Pick<OperatorColumns, 'id' | 'username' | 'role'>;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export async function countOperators(sql: Sql | TransactionSql): Promise<number> {
	const [row] = await sql<{ n: number }[]>`select count(*)::int as n from operators`;
	return row.n;
}

// Passwords never reach this file: auth/accounts.ts hashes and verifies them, these store hashes.

export async function insertOperator(sql: Sql | TransactionSql, username: string, passwordHash: string, role: OperatorRole): Promise<Operator> {
	const [row] = await sql<Operator[]>`
		insert into operators (username, password_hash, role) values (${username}, ${passwordHash}, ${role})
		returning id, username, role`;
	return row;
}

export type Credentials = Operator & Pick<OperatorColumns, 'passwordHash' | 'disabledAt'>;

export async function credentialsByUsername(sql: Sql | TransactionSql, username: string): Promise<Credentials | null> {
	const [row] = await sql<Credentials[]>`
		select id, username, role, password_hash as "passwordHash", disabled_at as "disabledAt"
		from operators where username = ${username}`;
	return row ?? null;
}

export async function passwordHashOf(sql: Sql | TransactionSql, operatorId: string): Promise<string | null> {
	const [row] = await sql<Pick<OperatorColumns, 'passwordHash'>[]>`select password_hash as "passwordHash" from operators where id = ${operatorId}`;
	return row?.passwordHash ?? null;
}

/** Creates the configured first operator (admin) unless someone took the name meanwhile. */
export async function insertConfiguredOperator(sql: Sql | TransactionSql, username: string, passwordHash: string): Promise<void> {
	await sql`
		insert into operators (username, password_hash, role) values (${username}, ${passwordHash}, 'admin')
		on conflict do nothing`;
}

export async function setPasswordHash(sql: Sql | TransactionSql, operatorId: string, passwordHash: string): Promise<void> {
	await sql`update operators set password_hash = ${passwordHash} where id = ${operatorId}`;
}

/** Creates a login session; returns the cookie token (only its hash is stored) and its expiry (ISO 8601). */
export async function createAuthSession(sql: Sql | TransactionSql, operatorId: string, days: number): Promise<{ token: string; expiresAt: string }> {
	const token = randomBytes(32).toString('base64url');
	const [row] = await sql<{ expiresAt: string }[]>`
		insert into auth_sessions (token_hash, operator_id, expires_at)
		values (${sha256(token)}, ${operatorId}, now() + ${days}::float8 * interval '1 day')
		returning expires_at as "expiresAt"`;
	return { token, expiresAt: row.expiresAt };
}

/** The stored form of a session token (what `auth.revoked` events name). */
export const sessionTokenHash = (token: string) => sha256(token);

export async function getOperatorBySessionToken(sql: Sql | TransactionSql, token: string): Promise<Operator | null> {
	return (await getAuthSession(sql, token))?.user ?? null;
}

/** A live sign-in session: its operator and when its password was last given (sign-in or step-up). */
export async function getAuthSession(sql: Sql | TransactionSql, token: string): Promise<{ user: Operator; verifiedAt: string } | null> {
	const [row] = await sql<(Operator & { verifiedAt: string })[]>`
		select o.id, o.username, o.role, s.verified_at as "verifiedAt"
		from auth_sessions s join operators o on o.id = s.operator_id
		where s.token_hash = ${sha256(token)} and s.expires_at > now() and o.disabled_at is null`;
	return row ? { user: { id: row.id, username: row.username, role: row.role }, verifiedAt: row.verifiedAt } : null;
}

/** Notes that this session's operator just gave their password again (step-up). */
export async function markSessionVerified(sql: Sql | TransactionSql, token: string): Promise<boolean> {
	const rows = await sql`update auth_sessions set verified_at = now() where token_hash = ${sha256(token)} and expires_at > now() returning 1`;
	return rows.length > 0;
}

export async function deleteAuthSession(sql: Sql | TransactionSql, token: string): Promise<void> {
	await sql`delete from auth_sessions where token_hash = ${sha256(token)}`;
}

const SETUP_KEY = 'setup_token';

/** Issues a fresh one-time setup token (valid 24 h) and returns it; only its hash is stored. */
export async function issueSetupToken(sql: Sql | TransactionSql): Promise<string> {
	const token = randomBytes(24).toString('base64url');
	const value = { hash: sha256(token), expiresAt: Date.now() + 86_400_000 };
	await sql`
		insert into settings (key, value) values (${SETUP_KEY}, ${JSON.stringify(value)}::text::jsonb)
		on conflict (key) do update set value = excluded.value, updated_at = now()`;
	return token;
}

/**
 * Creates the first operator (admin) with a valid setup token; the token is consumed in the
 * same transaction, and nothing happens once any operator exists.
 */
export async function completeSetup(sql: Sql, token: string, username: string, passwordHash: string): Promise<Operator | 'invalid-token' | 'already-set-up'> {
	return sql.begin(async (tx) => {
		await tx`select pg_advisory_xact_lock(7140202612)`;
		if ((await countOperators(tx)) > 0) return 'already-set-up' as const;
		const [row] = await tx<{ value: { hash?: string; expiresAt?: number } }[]>`select value from settings where key = ${SETUP_KEY}`;
		const v = row?.value;
		if (!v?.hash || v.hash !== sha256(token) || (v.expiresAt ?? 0) < Date.now()) return 'invalid-token' as const;
		await tx`delete from settings where key = ${SETUP_KEY}`;
		const [op] = await tx<Operator[]>`
			insert into operators (username, password_hash, role) values (${username}, ${passwordHash}, 'admin')
			returning id, username, role`;
		return op;
	});
}

export type OperatorListing = Operator & Pick<OperatorColumns, 'createdAt' | 'disabledAt'> & { activeSessions: number };

export async function listOperators(sql: Sql | TransactionSql): Promise<OperatorListing[]> {
	return sql<OperatorListing[]>`
		select o.id, o.username, o.role, o.created_at as "createdAt", o.disabled_at as "disabledAt",
			(select count(*)::int from auth_sessions s where s.operator_id = o.id and s.expires_at > now()) as "activeSessions"
		from operators o order by o.created_at`;
}

/** Arbitrary constant: serialises changes that could leave no enabled admin. */
const ADMIN_GUARD_LOCK = 7_140_202_614;

export type AccountError = { error: string; code: 'NOT_FOUND' | 'CONFLICT' | 'BAD_REQUEST' };
export type Actor = Pick<OperatorColumns, 'id' | 'username'>;

/**
 * Ends every credential of an operator at once: the sign-in sessions go (but the one kept), the
 * API tokens are revoked (a token minted before a password change must not outlive it), and an
 * `auth.revoked` event closes the operator's open live streams in every process (token streams
 * too). Returns how many tokens it revoked.
 */
async function revokeCredentials(tx: TransactionSql, operatorId: string, keepTokenHash: string | null = null): Promise<number> {
	await tx`delete from auth_sessions where operator_id = ${operatorId} ${keepTokenHash ? tx`and token_hash <> ${keepTokenHash}` : tx``}`;
	const tokens = await tx`update api_tokens set revoked_at = now() where operator_id = ${operatorId} and revoked_at is null returning id`;
	await emitEvent(tx, { sessionId: null, type: 'auth.revoked', payload: { operatorId, keep: keepTokenHash } });
	return tokens.length;
}

async function lockedTarget(tx: TransactionSql, id: string) {
	await tx`select pg_advisory_xact_lock(${ADMIN_GUARD_LOCK})`;
	const [row] = await tx<(Operator & Pick<OperatorColumns, 'disabledAt'>)[]>`
		select id, username, role, disabled_at as "disabledAt" from operators where id = ${id}`;
	return row ?? null;
}

async function otherEnabledAdmins(tx: TransactionSql, id: string): Promise<number> {
	const [{ n }] = await tx<{ n: number }[]>`select count(*)::int as n from operators where role = 'admin' and disabled_at is null and id <> ${id}`;
	return n;
}

/** An admin creates an account. */
export async function adminCreateOperator(
	sql: Sql,
	actor: Actor,
	input: Pick<OperatorColumns, 'username' | 'passwordHash' | 'role'>
): Promise<Operator | AccountError> {
	return sql.begin(async (tx) => {
		const [taken] = await tx`select 1 from operators where lower(username) = lower(${input.username})`;
		if (taken) return { error: `The username "${input.username}" is taken.`, code: 'CONFLICT' as const };
		const [op] = await tx<Operator[]>`
			insert into operators (username, password_hash, role) values (${input.username}, ${input.passwordHash}, ${input.role})
			returning id, username, role`;
		await recordAudit(tx, {
			actor,
			action: 'operator.created',
			route: 'settings',
			subjectType: 'operator',
			subjectId: op.username,
			detail: { operatorId: op.id, role: op.role }
		});
		return op;
	});
}

/** Sets a new password for someone else; their sessions end (they sign in with the new one). */
export async function adminResetPassword(sql: Sql, actor: Actor, id: string, passwordHash: string): Promise<Operator | AccountError> {
	return sql.begin(async (tx) => {
		const t = await lockedTarget(tx, id);
		if (!t) return { error: 'No such operator.', code: 'NOT_FOUND' as const };
		await tx`update operators set password_hash = ${passwordHash} where id = ${id}`;
		const revokedTokens = await revokeCredentials(tx, id);
		await recordAudit(tx, {
			actor,
			action: 'operator.password_reset',
			route: 'settings',
			subjectType: 'operator',
			subjectId: t.username,
			detail: { operatorId: id, revokedTokens }
		});
		return { id: t.id, username: t.username, role: t.role };
	});
}

/** Disables or re-enables an account. The last enabled admin cannot be disabled. */
export async function adminSetDisabled(sql: Sql, actor: Actor, id: string, disabled: boolean): Promise<Operator | AccountError> {
	return sql.begin(async (tx) => {
		const t = await lockedTarget(tx, id);
		if (!t) return { error: 'No such operator.', code: 'NOT_FOUND' as const };
		if (disabled && t.role === 'admin' && !t.disabledAt && (await otherEnabledAdmins(tx, id)) === 0) {
			return { error: `${t.username} is the last admin and cannot be disabled; make another admin first.`, code: 'CONFLICT' as const };
		}
		if (disabled === !!t.disabledAt) return { id: t.id, username: t.username, role: t.role };
		await tx`update operators set disabled_at = ${disabled ? tx`now()` : null} where id = ${id}`;
		const revokedTokens = disabled ? await revokeCredentials(tx, id) : 0;
		await recordAudit(tx, {
			actor,
			action: disabled ? 'operator.disabled' : 'operator.enabled',
			route: 'settings',
			subjectType: 'operator',
			subjectId: t.username,
			detail: { operatorId: id, ...(disabled ? { revokedTokens } : {}) }
		});
		return { id: t.id, username: t.username, role: t.role };
	});
}

/** Changes an account's role. The last enabled admin cannot be demoted. */
export async function adminSetRole(sql: Sql, actor: Actor, id: string, role: OperatorRole): Promise<Operator | AccountError> {
	return sql.begin(async (tx) => {
		const t = await lockedTarget(tx, id);
		if (!t) return { error: 'No such operator.', code: 'NOT_FOUND' as const };
		if (t.role === role) return { id: t.id, username: t.username, role: t.role };
		if (t.role === 'admin' && !t.disabledAt && (await otherEnabledAdmins(tx, id)) === 0) {
			return { error: `${t.username} is the last admin and cannot be demoted; make another admin first.`, code: 'CONFLICT' as const };
		}
		await tx`update operators set role = ${role} where id = ${id}`;
		await recordAudit(tx, {
			actor,
			action: 'operator.role_changed',
			route: 'settings',
			subjectType: 'operator',
			subjectId: t.username,
			detail: { operatorId: id, from: t.role, to: role }
		});
		return { id: t.id, username: t.username, role };
	});
}

/** Stores an operator's own new password hash; their other sessions end and their API tokens are revoked. */
export async function changeOwnPasswordHash(sql: Sql, actor: Actor, currentToken: string | null, passwordHash: string): Promise<number> {
	return sql.begin(async (tx) => {
		await tx`update operators set password_hash = ${passwordHash} where id = ${actor.id}`;
		const revokedTokens = await revokeCredentials(tx, actor.id, currentToken ? sha256(currentToken) : null);
		// The session that just gave the password is as fresh as a sign-in.
		if (currentToken) await tx`update auth_sessions set verified_at = now() where token_hash = ${sha256(currentToken)}`;
		await recordAudit(tx, {
			actor,
			action: 'operator.password_changed',
			route: 'settings',
			subjectType: 'operator',
			subjectId: actor.username,
			detail: { operatorId: actor.id, revokedTokens }
		});
		return revokedTokens;
	});
}
