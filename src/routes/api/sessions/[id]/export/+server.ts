import { error } from '@sveltejs/kit';
import { z } from 'zod';
import { exportFormat } from '$lib/schemas/sessions';
import { exportSession } from '$lib/server/sessions/export';
import type { RequestHandler } from './$types';

/** One session as a download: `?format=md` (Markdown) or `json` (the stored UI messages). Signed-in operators only. */
export const GET: RequestHandler = async ({ params, url, locals }) => {
	if (!locals.user) error(401, 'Sign in first.');
	const id = z.uuid().safeParse(params.id);
	const format = exportFormat.safeParse(url.searchParams.get('format') ?? 'md');
	if (!id.success) error(404, 'No such chat session.');
	if (!format.success) error(400, 'format is md or json.');
	const file = await exportSession(id.data, format.data);
	if (!file) error(404, 'No such chat session.');
	return new Response(file.body, {
		headers: { 'content-type': file.contentType, 'content-disposition': `attachment; filename="${file.filename}"`, 'cache-control': 'no-store' }
	});
};
