import { error } from '@sveltejs/kit';
import { z } from 'zod';
import { qualificationExport } from '$lib/server/qualify/latest';
import type { RequestHandler } from './$types';

/** One qualification (`npm run qualify`) as a JSON download: its verdict, figures and every scenario's results. Admins only. */
export const GET: RequestHandler = async ({ params, locals }) => {
	if (!locals.user) error(401, 'Sign in first.');
	if (locals.user.role !== 'admin') error(403, 'Only an admin may export qualifications.');
	const id = z.uuid().safeParse(params.id);
	if (!id.success) error(404, 'No such qualification.');
	const file = await qualificationExport(id.data);
	if (!file) error(404, 'No such qualification.');
	return new Response(file.body, {
		headers: { 'content-type': 'application/json', 'content-disposition': `attachment; filename="${file.filename}"`, 'cache-control': 'no-store' }
	});
};
