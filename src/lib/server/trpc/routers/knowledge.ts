import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { createKnowledge, deleteKnowledge, getKnowledge, listKnowledge, searchKnowledge, updateKnowledge } from '$lib/server/db/queries/knowledge';
import { sql } from '$lib/server/db/index';
import { operatorProcedure, router } from '../t';

/** Largest note body, in UTF-8 bytes. */
export const MAX_BODY_BYTES = 100 * 1024;

const id = z.object({ id: z.uuid('not a valid note id') });

export const knowledgeInput = z.object({
	title: z.string().trim().min(1, 'give the note a title').max(200, 'at most 200 characters'),
	body: z.string().refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_BODY_BYTES, 'at most 100 KB')
});

const notFound = () => new TRPCError({ code: 'NOT_FOUND', message: 'No such note; it may have been deleted.' });
const readOnly = () =>
	new TRPCError({
		code: 'FORBIDDEN',
		message: 'This note was imported from a file; edit the file instead (it is re-imported at start).'
	});

export const knowledgeRouter = router({
	list: operatorProcedure.query(() => listKnowledge(sql())),
	get: operatorProcedure.input(id).query(async ({ input }) => {
		const note = await getKnowledge(sql(), input.id);
		if (!note) throw notFound();
		return note;
	}),
	create: operatorProcedure.input(knowledgeInput).mutation(({ input }) => createKnowledge(sql(), input)),
	update: operatorProcedure.input(id.extend({ note: knowledgeInput })).mutation(async ({ input }) => {
		const r = await updateKnowledge(sql(), input.id, input.note);
		if (r === null) throw notFound();
		if (r === 'read-only') throw readOnly();
		return r;
	}),
	remove: operatorProcedure.input(id).mutation(async ({ input }) => {
		const r = await deleteKnowledge(sql(), input.id);
		if (r === null) throw notFound();
		if (r === 'read-only') throw readOnly();
		return { ok: true as const };
	}),
	search: operatorProcedure
		.input(
			z.object({
				query: z.string().trim().min(1, 'type something to search for').max(200, 'at most 200 characters'),
				limit: z.number().int().min(1).max(50).default(20)
			})
		)
		.query(({ input }) => searchKnowledge(sql(), input.query, input.limit))
});
