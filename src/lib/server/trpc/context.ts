import type { RequestEvent } from '@sveltejs/kit';
import type { Operator } from '../db/queries/operators';
import type { ApiTokenAuth } from '../db/queries/api-tokens';

/** Who calls a procedure: the operator, and the API token when the request used one (its scope caps what it may do). */
export type Context = { user: Operator | null; apiToken?: ApiTokenAuth | null; event: RequestEvent };

export async function createContext(event: RequestEvent): Promise<Context> {
	return { user: event.locals.user, apiToken: event.locals.apiToken ?? null, event };
}
