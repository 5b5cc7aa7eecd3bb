import { error, fail } from '@sveltejs/kit';
import { z } from 'zod';
import { requireAdmin } from '$lib/server/auth/guard';
import { sql } from '$lib/server/db/index';
import { getReplay, listReplayCasesOf } from '$lib/server/db/queries/replays';
import { getSession } from '$lib/server/db/queries/sessions';
import { comparisonRows, regressions, sessionFigures } from '$lib/server/replay/compare';
import { saveReplayCase } from '$lib/server/replay/cases';
import { Refusal } from '$lib/server/refusal';
import { replayState } from '$lib/schemas/replay';
import type { Actions, PageServerLoad } from './$types';

const ids = z.object({ sessionId: z.uuid(), replayId: z.uuid() });

export const load: PageServerLoad = async ({ params, locals }) => {
	requireAdmin(locals);
	const p = ids.safeParse(params);
	if (!p.success) error(404, 'No such replay.');
	const row = await getReplay(sql(), p.data.replayId);
	if (!row || row.replayOf !== p.data.sessionId) error(404, 'No such replay.');
	const state = replayState.parse(row.replay);
	const original = await getSession(sql(), p.data.sessionId);
	const ended = state.status === 'done' || state.status === 'failed';
	const [a, b] = ended ? await Promise.all([sessionFigures(p.data.sessionId), sessionFigures(p.data.replayId)]) : [null, null];
	const cases = (await listReplayCasesOf(sql(), p.data.sessionId)).filter((c) => c.replaySessionId === p.data.replayId);
	return {
		replay: { id: row.id, createdAt: row.createdAt, ...state },
		original: { id: p.data.sessionId, title: original?.title ?? 'a deleted session' },
		rows: a && b ? comparisonRows(a, b) : [],
		// Measured against the original as if it were a saved case: what would fail.
		worse: a && b ? regressions(a, b) : [],
		cases: cases.map((c) => c.name)
	};
};

export const actions: Actions = {
	save: async ({ params, locals, request }) => {
		requireAdmin(locals);
		const p = ids.safeParse(params);
		if (!p.success) error(404, 'No such replay.');
		const name = z
			.string()
			.max(200)
			.safeParse((await request.formData()).get('name'));
		try {
			const saved = await saveReplayCase(p.data.replayId, name.success ? name.data : '');
			return { saved: saved.name };
		} catch (e) {
			if (e instanceof Refusal) return fail(e.code === 'CONFLICT' ? 409 : 400, { saveError: e.message });
			if (e instanceof z.ZodError) return fail(400, { saveError: `The name: ${e.issues[0]?.message ?? 'invalid'}.` });
			throw e;
		}
	}
};
