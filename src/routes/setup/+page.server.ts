import { fail, redirect } from '@sveltejs/kit';
import { z } from 'zod';
import { sql } from '$lib/server/db/index';
import { countOperators, createAuthSession } from '$lib/server/db/queries/operators';
import { completeSetup } from '$lib/server/auth/accounts';
import { setSessionCookie } from '$lib/server/auth/cookies';
import { env } from '$lib/server/env';
import type { Actions, PageServerLoad } from './$types';

const setupForm = z
	.object({
		token: z.string().min(1, 'The setup token is missing; use the link printed in the console.'),
		username: z
			.string()
			.trim()
			.regex(/^[a-zA-Z0-9._-]{2,40}$/, 'Username: 2–40 letters, digits, dots, dashes or underscores.'),
		password: z.string().min(10, 'Password: at least 10 characters.'),
		confirm: z.string()
	})
	.refine((v) => v.password === v.confirm, { message: 'The passwords differ.' });

export const load: PageServerLoad = async ({ url }) => {
	if ((await countOperators(sql())) > 0) redirect(303, '/login');
	return { token: url.searchParams.get('token') ?? '' };
};

export const actions: Actions = {
	default: async ({ request, cookies, url }) => {
		const form = Object.fromEntries(await request.formData());
		const parsed = setupForm.safeParse(form);
		const username = typeof form.username === 'string' ? form.username : '';
		if (!parsed.success) return fail(400, { username, error: parsed.error.issues[0].message });
		const r = await completeSetup(sql(), parsed.data.token, parsed.data.username, parsed.data.password);
		if (r === 'already-set-up') redirect(303, '/login');
		if (r === 'invalid-token') return fail(400, { username, error: 'The setup token is wrong or has expired; restart Nomos for a new one.' });
		const { token, expiresAt } = await createAuthSession(sql(), r.id, env().NOMOS_SESSION_DAYS);
		setSessionCookie(cookies, url, token, new Date(expiresAt));
		redirect(303, '/');
	}
};
