import { error, fail, redirect } from '@sveltejs/kit';
import { z } from 'zod';
import { createAuthSession } from '$lib/server/db/queries/operators';
import { checkCredentials } from '$lib/server/auth/accounts';
import { sleep, throttleBefore, throttleFailure, throttleKeys, throttleSuccess } from '$lib/server/auth/login-throttle';
import { recordAudit } from '$lib/server/db/queries/audit';
import { sql } from '$lib/server/db/index';
import { setSessionCookie } from '$lib/server/auth/cookies';
import { PasswordBusyError } from '$lib/server/auth/password';
import { safeNext } from '$lib/server/auth/guard';
import { isApiClient } from '$lib/server/auth/api-client';
import { env } from '$lib/server/env';
import type { Actions, PageServerLoad } from './$types';

const credentials = z.object({
	username: z.string().trim().min(1, 'Enter your username.').max(64, 'That username is too long.'),
	password: z.string().min(1, 'Enter your password.').max(200, 'That password is too long.')
});

const waitText = (s: number) => (s < 90 ? `${s} s` : `${Math.ceil(s / 60)} min`);

export const load: PageServerLoad = async ({ locals, url }) => {
	if (locals.user) redirect(303, safeNext(url.searchParams.get('next'), url.origin));
	return {};
};

export const actions: Actions = {
	default: async ({ request, cookies, url, getClientAddress, setHeaders }) => {
		const form = Object.fromEntries(await request.formData());
		const parsed = credentials.safeParse(form);
		const username = typeof form.username === 'string' ? form.username.slice(0, 64) : '';
		// A browser gets the page (or an enhanced form its data) again with the message; a script gets
		// the status itself: 400, 401 wrong credentials, 429 throttled, 503 busy (auth/api-client.ts).
		const api = isApiClient(request);
		const refuse = (status: number, message: string, retryAfter?: number) => {
			if (retryAfter !== undefined) setHeaders({ 'retry-after': String(retryAfter) });
			if (api) error(status, message);
			return fail(status, { username, error: message });
		};
		if (!parsed.success) return refuse(400, parsed.error.issues[0].message);
		// Who may be refused, and why, is in the threat model in auth/login-throttle.ts.
		const address = getClientAddress();
		const keys = throttleKeys(parsed.data.username, address);
		const throttled = (seconds: number) => refuse(429, `Too many failed sign-ins. Try again in ${waitText(seconds)}.`, seconds);

		const before = await throttleBefore(sql(), keys);
		if (before.blockedFor > 0) return throttled(before.blockedFor);
		if (before.delayMs > 0) await sleep(before.delayMs);
		let op;
		try {
			op = await checkCredentials(sql(), parsed.data.username, parsed.data.password);
		} catch (e) {
			if (!(e instanceof PasswordBusyError)) throw e;
			return refuse(503, 'Nomos is busy checking other sign-ins. Try again in a moment.', 1);
		}
		if (!op) {
			const wait = await throttleFailure(sql(), keys, env().NOMOS_LOGIN_BACKOFF_MAX_S);
			await recordAudit(sql(), {
				actor: null,
				action: 'login.failed',
				route: 'login',
				subjectType: 'operator',
				subjectId: parsed.data.username,
				detail: { address }
			});
			if (wait > 0) return throttled(wait);
			// The page keeps its 400 (a form that needs correcting); a script is told it is not signed in.
			return refuse(api ? 401 : 400, 'Wrong username or password.');
		}
		await throttleSuccess(sql(), keys);
		await recordAudit(sql(), { actor: op, action: 'login.succeeded', route: 'login', subjectType: 'operator', subjectId: op.username, detail: { address } });
		const { token, expiresAt } = await createAuthSession(sql(), op.id, env().NOMOS_SESSION_DAYS);
		setSessionCookie(cookies, url, token, new Date(expiresAt));
		redirect(303, safeNext(url.searchParams.get('next'), url.origin));
	}
};
