import { error, json, redirect, type Handle, type ServerInit } from '@sveltejs/kit';
import { sequence } from '@sveltejs/kit/hooks';
import { building } from '$app/environment';
import { boot } from '$lib/server/boot';
import { preloadTasks, taskList } from '../tasks/index';
import { ConfigError } from '$lib/server/env';
import { isAdminRoute } from '$lib/server/auth/guard';
import { guardRequest } from '$lib/server/auth/request-guard';

export const init: ServerInit = async () => {
	if (building) return;
	try {
		await boot('web', { taskList, preloadTasks });
	} catch (e) {
		if (e instanceof ConfigError) {
			console.error(e.message);
			process.exit(1);
		}
		throw e;
	}
};

// Origin check (cookie requests), sign-in by cookie or API token, a read token's scope: auth/request-guard.ts.
// The same authenticate() as the node SSE fast path (realtime/node-sse.ts): one function, one cookie parser.
const signIn: Handle = async ({ event, resolve }) => {
	const g = await guardRequest(event.request, event.url);
	if (g.kind === 'refuse') return json(g.body, { status: g.status });
	const { user, sessionToken, apiToken, sessionVerifiedAt } = g.auth;
	event.locals.user = user;
	event.locals.sessionToken = sessionToken;
	event.locals.sessionVerifiedAt = sessionVerifiedAt ?? null;
	event.locals.apiToken = apiToken ?? null;
	const path = event.url.pathname;
	if (g.kind === 'sign-in') redirect(303, `/login?next=${encodeURIComponent(path + event.url.search)}`);
	// A second lock only: each admin load, endpoint and procedure checks the role itself.
	if (isAdminRoute(event.route.id) && user?.role !== 'admin') {
		error(403, 'Admins only.');
	}
	return resolve(event);
};

// The procedures (and what they import: tRPC, the agent, SSH) load with the first tRPC call, not at start.
let trpcHandle: Promise<Handle> | undefined;
const trpc: Handle = async (input) => {
	if (!input.event.url.pathname.startsWith('/trpc')) return input.resolve(input.event);
	trpcHandle ??= Promise.all([import('trpc-sveltekit'), import('$lib/server/trpc/router'), import('$lib/server/trpc/context')]).then(([t, r, c]) =>
		t.createTRPCHandle({ router: r.appRouter, createContext: c.createContext, url: '/trpc' })
	);
	return (await trpcHandle)(input);
};

export const handle = sequence(signIn, trpc);
