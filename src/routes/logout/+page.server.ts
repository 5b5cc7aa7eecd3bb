import { redirect } from '@sveltejs/kit';
import { sql } from '$lib/server/db/index';
import { deleteAuthSession } from '$lib/server/db/queries/operators';
import { clearSessionCookie } from '$lib/server/auth/cookies';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = () => redirect(303, '/');

export const actions: Actions = {
	default: async ({ locals, cookies }) => {
		if (locals.sessionToken) await deleteAuthSession(sql(), locals.sessionToken);
		clearSessionCookie(cookies);
		redirect(303, '/login');
	}
};
