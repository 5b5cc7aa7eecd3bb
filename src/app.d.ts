import type { Operator } from '$lib/server/db/queries/operators';
import type { ApiTokenAuth } from '$lib/server/db/queries/api-tokens';

declare global {
	namespace App {
		interface Locals {
			user: Operator | null;
			sessionToken: string | null;
			/** When the cookie's session last gave the password (sign-in or step-up): irreversible approvals need it recent. */
			sessionVerifiedAt: string | null;
			/** The API token the request was authenticated by (`Authorization: Bearer`), or null for a cookie. */
			apiToken: ApiTokenAuth | null;
		}
		interface Error {
			message: string;
		}
	}
}

export {};
