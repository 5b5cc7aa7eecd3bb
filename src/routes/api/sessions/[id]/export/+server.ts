import { error } from '@sveltejs/kit';
import { z } from 'zod';
import { exportFormat } from '$lib/schemas/sessions';
import { exportSession } from '$lib/server/sessions/export';
import { sql } from '$lib/server/db/index';
import { sessionAccess } from '$lib/server/access/sessions';
import type { RequestHandler } from './$types';

/** One session as a download: `?format=md` (Markdown) or `json` (the stored UI messages). Its owner, the operators it is shared with and admins only. */
export const GET: RequestHandler = async ({ params, url, locals }) => {
	if (!locals.user) error(401, 'Sign in first.');
	const id = z.uuid().safeParse(params.id);
	const format = exportFormat.safeParse(url.searchParams.get('format') ?? 'md');
	if (!id.success) error(404, 'No such chat session.');
	if (!format.success) error(400, 'format is md or json.');
	// Only a session the operator may read (access/sessions.ts); another's is "no such chat".
	if (!(await sessionAccess(sql(), id.data, locals.user))) error(404, 'No such chat session.');
	const file = await exportSession(id.data, format.data);
	if (!file) error(404, 'No such chat session.');
	return new Response(file.body, {
		headers: { 'content-type': file.contentType, 'content-disposition': `attachment; filename="${file.filename}"`, 'cache-control': 'no-store' }
	});
};
