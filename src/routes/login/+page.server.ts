import { fail, redirect } from '@sveltejs/kit';
import { z } from 'zod';
import { checkCredentials, createAuthSession } from '$lib/server/db/queries/operators';
import { setSessionCookie } from '$lib/server/auth/cookies';
import { env } from '$lib/server/env';
import type { Actions, PageServerLoad } from './$types';

const credentials = z.object({
	username: z.string().trim().min(1, 'Enter your username.'),
	password: z.string().min(1, 'Enter your password.')
});

function safeNext(next: string | null): string {
	return next && next.startsWith('/') && !next.startsWith('//') ? next : '/';
}

export const load: PageServerLoad = async ({ locals, url }) => {
	if (locals.user) redirect(303, safeNext(url.searchParams.get('next')));
	return {};
};

export const actions: Actions = {
	default: async ({ request, cookies, url }) => {
		const form = Object.fromEntries(await request.formData());
		const parsed = credentials.safeParse(form);
		const username = typeof form.username === 'string' ? form.username : '';
		if (!parsed.success) return fail(400, { username, error: parsed.error.issues[0].message });
		const op = await checkCredentials(parsed.data.username, parsed.data.password);
		if (!op) return fail(400, { username, error: 'Wrong username or password.' });
		const { token, expiresAt } = await createAuthSession(op.id, env().NOMOS_SESSION_DAYS);
		setSessionCookie(cookies, url, token, expiresAt);
		redirect(303, safeNext(url.searchParams.get('next')));
	}
};
