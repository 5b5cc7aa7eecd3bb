import type { Operator } from '$lib/server/db/queries/operators';

declare global {
	namespace App {
		interface Locals {
			user: Operator | null;
			sessionToken: string | null;
		}
		interface Error {
			message: string;
		}
	}
}

export {};
