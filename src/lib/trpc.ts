import { browser } from '$app/environment';
import { createTRPCClient, type TRPCClientInit } from 'trpc-sveltekit';
import { TRPCClientError } from '@trpc/client';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '$lib/server/trpc/router';

type Client = ReturnType<typeof createTRPCClient<AppRouter>>;

/** What each procedure returns, as the client receives it: `RouterOutputs['schedules']['list']`. */
export type RouterOutputs = inferRouterOutputs<AppRouter>;
let browserClient: Client | undefined;

/**
 * The typed tRPC client. In the browser it is created once; on the server pass the load
 * event (`trpc(event)`), since procedures then run with the request's cookies.
 */
export function trpc(init?: TRPCClientInit): Client {
	if (init) return createTRPCClient<AppRouter>({ init });
	if (!browser) throw new Error('trpc() without a load event can only be used in the browser');
	browserClient ??= createTRPCClient<AppRouter>();
	return browserClient;
}

/** A message fit to show the operator, from any error a procedure call threw. */
export function errorMessage(e: unknown): string {
	if (e instanceof TRPCClientError) return e.message;
	if (e instanceof Error) return e.message;
	return String(e);
}

/** Whether a refused call would go through once the operator gives their password again (step-up). */
export function needsStepUp(e: unknown): boolean {
	return e instanceof TRPCClientError && (e.data as { stepUp?: boolean } | undefined)?.stepUp === true;
}
