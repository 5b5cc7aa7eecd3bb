import { json } from '@sveltejs/kit';
import { RetryError } from 'ai';
import { z } from 'zod';
import { getModel } from '$lib/server/agent/provider';
import { describeModelError } from '$lib/server/agent/model-errors';
import { reviewSession, writeNarrative } from '$lib/server/review';
import { requireAdmin } from '$lib/server/auth/guard';
import type { RequestHandler } from './$types';

const TIMEOUT_MS = 60_000;

/** Asks the model to tell the root cause from the computed findings. The review never depends on it. */
export const POST: RequestHandler = async ({ params, locals }) => {
	requireAdmin(locals);
	const id = z.uuid().safeParse(params.sessionId);
	if (!id.success) return json({ message: 'No such chat session.' }, { status: 404 });
	const model = getModel();
	if (!model) return json({ message: 'No model is configured, so there is no narrative; the findings above are complete without it.' }, { status: 409 });
	const review = await reviewSession(id.data);
	if (!review) return json({ message: 'No such chat session.' }, { status: 404 });
	try {
		const narrative = await writeNarrative(review, model, AbortSignal.timeout(TIMEOUT_MS));
		if (!narrative) return json({ message: 'The model returned an empty answer. Try again.' }, { status: 502 });
		return json({ narrative });
	} catch (e) {
		const cause = RetryError.isInstance(e) ? e.lastError : e;
		return json({ message: `The narrative could not be written: ${describeModelError(cause)}.` }, { status: 502 });
	}
};
