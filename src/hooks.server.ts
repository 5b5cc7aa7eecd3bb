import { error, json, redirect, type Handle, type ServerInit } from '@sveltejs/kit';
import { sequence } from '@sveltejs/kit/hooks';
import { building } from '$app/environment';
import { createTRPCHandle } from 'trpc-sveltekit';
import { boot } from '$lib/server/boot';
import { ConfigError } from '$lib/server/env';
import { getOperatorBySessionToken } from '$lib/server/db/queries/operators';
import { SESSION_COOKIE } from '$lib/server/auth/cookies';
import { isAdminRoute, isApiPath, isCrossOrigin, isPublicPath } from '$lib/server/auth/guard';
import { appRouter } from '$lib/server/trpc/router';
import { createContext } from '$lib/server/trpc/context';

export const init: ServerInit = async () => {
	if (building) return;
	try {
		await boot('web');
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

const authenticate: Handle = async ({ event, resolve }) => {
	const token = event.cookies.get(SESSION_COOKIE) ?? null;
	event.locals.sessionToken = token;
	event.locals.user = token ? await getOperatorBySessionToken(token) : null;
	const path = event.url.pathname;
	if (!event.locals.user && !isPublicPath(path)) {
		if (isApiPath(path) || event.request.method !== 'GET') {
			return json({ message: 'Sign in first.' }, { status: 401 });
		}
		redirect(303, `/login?next=${encodeURIComponent(path + event.url.search)}`);
	}
	// A second lock only: each admin load, endpoint and procedure checks the role itself.
	if (isAdminRoute(event.route.id) && event.locals.user?.role !== 'admin') {
		error(403, 'Admins only.');
	}
	return resolve(event);
};

export const handle = sequence(
	originCheck,
	authenticate,
	createTRPCHandle({ router: appRouter, createContext, url: '/trpc' })
);
