import { json } from '@sveltejs/kit';
import { z } from 'zod';
import { answerBody } from '$lib/schemas/questions';
import { describeZodError } from '$lib/schemas/zod-error';
import { answerFromPanel } from '$lib/server/questions/answer';
import { Refusal } from '$lib/server/refusal';
import type { RequestHandler } from './$types';

/** Answers an open question: 202 at once; the agent resumes in the background. Audited as route `rest`. */
export const POST: RequestHandler = async ({ request, params, locals }) => {
	const ids = z.object({ id: z.uuid(), qid: z.uuid() }).safeParse(params);
	if (!ids.success) return json({ message: 'No such question.' }, { status: 404 });
	let body: unknown;
	try {
		body = await request.json();
	} catch {
		return json({ message: 'body: send JSON like {"answer": "…"}.' }, { status: 400 });
	}
	const parsed = answerBody.safeParse(body);
	if (!parsed.success) return json({ message: describeZodError(parsed.error) }, { status: 400 });
	let r;
	try {
		r = await answerFromPanel(ids.data.id, ids.data.qid, parsed.data.answer, locals.user!, locals.apiToken, 'rest');
	} catch (e) {
		if (e instanceof Refusal) return json({ message: e.message }, { status: 403 });
		throw e;
	}
	if (!r.ok) {
		return r.reason === 'not_found'
			? json({ message: 'No such question.' }, { status: 404 })
			: json({ message: 'This question was already answered.' }, { status: 409 });
	}
	return json({ status: 'accepted', questionId: r.question.id }, { status: 202 });
};
