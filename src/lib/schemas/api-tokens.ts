import { z } from 'zod';

export const API_TOKEN_SCOPES = ['read', 'operate'] as const;
export type ApiTokenScope = (typeof API_TOKEN_SCOPES)[number];

/** Expiry choices in days; `none` never expires (until revoked). */
export const API_TOKEN_EXPIRIES = ['7', '30', '90', 'none'] as const;

export const createApiTokenInput = z.object({
	name: z.string().trim().min(1, 'give the token a name').max(80, 'at most 80 characters'),
	scope: z.enum(API_TOKEN_SCOPES, 'read or operate'),
	expiresInDays: z.enum(API_TOKEN_EXPIRIES, 'one of 7, 30, 90 or none')
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
