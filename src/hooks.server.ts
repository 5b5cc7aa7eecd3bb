import { error, json, redirect, type Handle, type ServerInit } from '@sveltejs/kit';
import { sequence } from '@sveltejs/kit/hooks';
import { building } from '$app/environment';
import { boot } from '$lib/server/boot';
import { preloadTasks, taskList } from '../tasks/index';
import { ConfigError } from '$lib/server/env';
import { authenticate, SIGN_IN_FIRST } from '$lib/server/auth/session';
import { isAdminRoute, isApiPath, isCrossOrigin, isPublicPath } from '$lib/server/auth/guard';

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

const originCheck: Handle = async ({ event, resolve }) => {
	if (isCrossOrigin(event.request, event.url)) {
		return json({ message: 'Cross-origin request refused.' }, { status: 403 });
	}
	return resolve(event);
};

// The same check as the node SSE fast path (realtime/node-sse.ts): one function, one cookie parser.
const signIn: Handle = async ({ event, resolve }) => {
	const { user, sessionToken } = await authenticate(event.request.headers.get('cookie'));
	event.locals.user = user;
	event.locals.sessionToken = sessionToken;
	const path = event.url.pathname;
	if (!user && !isPublicPath(path)) {
		if (isApiPath(path) || event.request.method !== 'GET') {
			return json(SIGN_IN_FIRST, { status: 401 });
		}
		redirect(303, `/login?next=${encodeURIComponent(path + event.url.search)}`);
	}
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

export const handle = sequence(originCheck, signIn, trpc);
