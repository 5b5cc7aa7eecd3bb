import type { TransactionSql } from 'postgres';
import { createHash, randomBytes } from 'node:crypto';
import type { Sql } from '../index';
import type { Operator } from './operators';
import type { ApiTokenListing, ApiTokenScope } from '../../../schemas/api-tokens';
import type { apiTokens } from '../schema';
import type { Expect, SameColumns } from '../same-type';

type ApiToken = typeof apiTokens.$inferSelect;

// ApiTokenListing (src/lib/schemas, what Settings gets) copies the table's columns: held to them.
type _ApiTokenListingColumns = Expect<SameColumns<ApiTokenListing, ApiToken>>;

/** Every token starts with this, so a leaked one is recognisable (secret scanners, logs). */
export const API_TOKEN_PREFIX = 'nomos_pat_';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** The token a request presented, as the rest of the request sees it (never the token itself). */
export type ApiTokenAuth = Pick<ApiToken, 'id' | 'name' | 'scope'>;

/**
 * Creates a token for an operator; returns the token (shown once, only its sha256 is stored).
 * 32 random bytes: a hash lookup without a constant-time compare is fine at that entropy.
 */
export async function insertApiToken(
	sql: Sql | TransactionSql,
	operatorId: string,
	t: { name: string; scope: ApiTokenScope; days: number | null }
): Promise<{ token: string; listing: ApiTokenListing }> {
	const token = API_TOKEN_PREFIX + randomBytes(32).toString('base64url');
	const [row] = await sql<ApiTokenListing[]>`
		insert into api_tokens (operator_id, name, scope, token_hash, hint, expires_at)
		values (${operatorId}, ${t.name}, ${t.scope}, ${sha256(token)}, ${token.slice(0, API_TOKEN_PREFIX.length + 4)},
			${t.days === null ? null : sql`now() + ${t.days}::float8 * interval '1 day'`})
		returning id, name, scope, hint, created_at as "createdAt", expires_at as "expiresAt", last_used_at as "lastUsedAt"`;
	return { token, listing: row };
}

/** The operator's tokens that are not revoked, newest first (expired ones too: the list says so). */
export async function listApiTokens(sql: Sql | TransactionSql, operatorId: string): Promise<ApiTokenListing[]> {
	return sql<ApiTokenListing[]>`
		select id, name, scope, hint, created_at as "createdAt", expires_at as "expiresAt", last_used_at as "lastUsedAt"
		from api_tokens where operator_id = ${operatorId} and revoked_at is null
		order by created_at desc`;
}

/** Revokes one of the operator's own tokens; false when there is no such live token of theirs. */
export async function revokeApiToken(sql: Sql | TransactionSql, operatorId: string, id: string): Promise<{ name: string; tokenHash: string } | null> {
	const [row] = await sql<Pick<ApiToken, 'name' | 'tokenHash'>[]>`
		update api_tokens set revoked_at = now()
		where id = ${id} and operator_id = ${operatorId} and revoked_at is null
		returning name, token_hash as "tokenHash"`;
	return row ?? null;
}

/**
 * The operator a bearer token acts as, with the token's id, name and scope: only for a known,
 * unrevoked, unexpired token of an enabled operator. Notes the use (at most once a minute, so a
 * busy script does not write a row per request).
 */
export async function operatorByApiToken(sql: Sql | TransactionSql, token: string): Promise<{ user: Operator; token: ApiTokenAuth } | null> {
	if (!token.startsWith(API_TOKEN_PREFIX) || token.length > 200) return null;
	const [row] = await sql<(Operator & { tokenId: string; tokenName: string; scope: ApiTokenScope; stale: boolean })[]>`
		select o.id, o.username, o.role, t.id as "tokenId", t.name as "tokenName", t.scope,
			(t.last_used_at is null or t.last_used_at < now() - interval '1 minute') as stale
		from api_tokens t join operators o on o.id = t.operator_id
		where t.token_hash = ${sha256(token)} and t.revoked_at is null
			and (t.expires_at is null or t.expires_at > now()) and o.disabled_at is null`;
	if (!row) return null;
	if (row.stale) await sql`update api_tokens set last_used_at = now() where id = ${row.tokenId}`;
	return { user: { id: row.id, username: row.username, role: row.role }, token: { id: row.tokenId, name: row.tokenName, scope: row.scope } };
}

/** The stored form of a token (what an `auth.revoked` event names to end its streams). */
export const apiTokenHash = (token: string) => sha256(token);
