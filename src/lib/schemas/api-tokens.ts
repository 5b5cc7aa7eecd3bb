import { z } from 'zod';

/**
 * What a token may do, each including the one before:
 * - `read`: queries, event streams, MCP read tools;
 * - `operate`: also request, deny, answer, chat, cancel, retry (approving nothing);
 * - `approve`: also approve what a person need not (never destructive or irreversible actions,
 *   never a request made with this same token — executions/authority.ts).
 */
export const API_TOKEN_SCOPES = ['read', 'operate', 'approve'] as const;
export type ApiTokenScope = (typeof API_TOKEN_SCOPES)[number];

/** Expiry choices in days: every token expires (there is no "never"); revoked early by a password change. */
export const API_TOKEN_EXPIRIES = ['7', '30', '90', '365'] as const;

export const createApiTokenInput = z.object({
	name: z.string().trim().min(1, 'give the token a name').max(80, 'at most 80 characters'),
	scope: z.enum(API_TOKEN_SCOPES, 'read, operate or approve'),
	expiresInDays: z.enum(API_TOKEN_EXPIRIES, 'one of 7, 30, 90 or 365'),
	/** A token outlives the session that made it: minting one asks for the password. */
	password: z.string().min(1, 'enter your password').max(200)
});
export type CreateApiTokenInput = z.infer<typeof createApiTokenInput>;

export const revokeApiTokenInput = z.object({ id: z.uuid() });

/** A token as the Settings list shows it (never the token itself). */
export type ApiTokenListing = {
	id: string;
	name: string;
	scope: ApiTokenScope;
	hint: string;
	createdAt: string;
	expiresAt: string | null;
	lastUsedAt: string | null;
};
