import { z } from 'zod';

export const hostInput = z.object({
	name: z
		.string()
		.trim()
		.regex(/^[a-zA-Z0-9][a-zA-Z0-9.-]{0,62}$/, 'use letters, digits, dots and dashes (max 63)'),
	address: z
		.string()
		.trim()
		.min(1, 'required')
		.max(253)
		.regex(/^[a-zA-Z0-9.:\-[\]]+$/, 'a hostname or IP address'),
	port: z.coerce.number().int().min(1).max(65535).default(22),
	username: z
		.string()
		.trim()
		.regex(/^[a-z_][a-z0-9_-]{0,31}$/, 'a Unix user name')
		.default('root'),
	keyPath: z.string().trim().min(1, 'path to the private key file on the Nomos server'),
	/** Optional second key, used only by approved executions' mutating steps; empty: the key above does all. */
	mutationKeyPath: z
		.string()
		.trim()
		.nullish()
		.transform((v) => v || null)
});
export type HostInputValue = z.infer<typeof hostInput>;

export const fingerprint = z.string().regex(/^SHA256:[A-Za-z0-9+/]{43}$/, 'a SHA256 fingerprint');
