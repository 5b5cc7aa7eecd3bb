import { fail, redirect } from '@sveltejs/kit';
import { z } from 'zod';
import { createAuthSession } from '$lib/server/db/queries/operators';
import { checkCredentials } from '$lib/server/auth/accounts';
import { clearLoginFailures, loginBlockedFor, recordLoginFailure } from '$lib/server/db/queries/login-throttle';
import { recordAudit } from '$lib/server/db/queries/audit';
import { sql } from '$lib/server/db/index';
import { setSessionCookie } from '$lib/server/auth/cookies';
import { PasswordBusyError } from '$lib/server/auth/password';
import { safeNext } from '$lib/server/auth/guard';
import { env } from '$lib/server/env';
import type { Actions, PageServerLoad } from './$types';

const credentials = z.object({
	username: z.string().trim().min(1, 'Enter your username.').max(64, 'That username is too long.'),
	password: z.string().min(1, 'Enter your password.').max(200, 'That password is too long.')
});

/** Failures before backoff starts, per username and per client address (several people may share one). */
const USER_THRESHOLD = 5;
const ADDRESS_THRESHOLD = 20;
/** Failures older than this are forgotten. */
const WINDOW_S = 15 * 60;

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
		if (!parsed.success) return fail(400, { username, error: parsed.error.issues[0].message });
		const userKey = `user:${parsed.data.username.toLowerCase()}`;
		const keys = [userKey, `addr:${getClientAddress()}`];
		const refuse = (seconds: number) => {
			setHeaders({ 'retry-after': String(seconds) });
			return fail(429, { username, error: `Too many failed sign-ins. Try again in ${waitText(seconds)}.` });
		};

		const blocked = await loginBlockedFor(sql(), keys);
		if (blocked > 0) return refuse(blocked);
		let op;
		try {
			op = await checkCredentials(sql(), parsed.data.username, parsed.data.password);
		} catch (e) {
			if (!(e instanceof PasswordBusyError)) throw e;
			setHeaders({ 'retry-after': '1' });
			return fail(503, { username, error: 'Nomos is busy checking other sign-ins. Try again in a moment.' });
		}
		if (!op) {
			const wait = await recordLoginFailure(
				sql(),
				[
					{ key: keys[0], threshold: USER_THRESHOLD },
					{ key: keys[1], threshold: ADDRESS_THRESHOLD }
				],
				{ maxSeconds: env().NOMOS_LOGIN_BACKOFF_MAX_S, windowSeconds: WINDOW_S }
			);
			await recordAudit(sql(), { actor: null, action: 'login.failed', route: 'login', subjectType: 'operator', subjectId: parsed.data.username, detail: { address: keys[1].slice(5) } });
			if (wait > 0) return refuse(wait);
			return fail(400, { username, error: 'Wrong username or password.' });
		}
		await clearLoginFailures(sql(), userKey);
		await recordAudit(sql(), { actor: op, action: 'login.succeeded', route: 'login', subjectType: 'operator', subjectId: op.username, detail: { address: keys[1].slice(5) } });
		const { token, expiresAt } = await createAuthSession(sql(), op.id, env().NOMOS_SESSION_DAYS);
		setSessionCookie(cookies, url, token, new Date(expiresAt));
		redirect(303, safeNext(url.searchParams.get('next'), url.origin));
	}
};
