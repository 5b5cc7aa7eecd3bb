import { tool } from 'ai';
import { z } from 'zod';
import { sql } from '../../db/index';
import { getKnowledge, searchKnowledge } from '../../db/queries/knowledge';
import { toolError, type ToolContext } from './context';

/** How many of the best note hits carry their text, and how much of it. */
const BODIES = 3;
const BODY_CHARS = 3000;

/** The `search_knowledge` tool: full-text search over the operator's notes and inventory entities. */
export function searchKnowledgeTool(ctx: ToolContext) {
	void ctx;
	return tool({
		description:
			"Full-text search of the operator's notes, Nomos's guide (how-tos) and the inventory's names and notes, best first; " +
			'quotes match a phrase, a vmid finds that guest. ' +
			'Search before asking the operator.',
		inputSchema: z
			.object({
				query: z.string().min(2).max(200)
			})
			.strict(),
		execute: async ({ query }) => {
			let hits;
			try {
				hits = await searchKnowledge(sql(), query, 8);
			} catch (e) {
				return toolError(`knowledge search failed: ${(e as Error).message}`);
			}
			if (hits.length === 0) {
				return { results: [], note: `No knowledge matched "${query}"; try other words or list_entities` };
			}
			let withBody = 0;
			const results = await Promise.all(
				hits.map(async (h) => {
					const base = {
						kind: h.kind,
						id: h.id,
						title: h.title,
						source: h.source,
						...(h.externalId ? { externalId: h.externalId } : {}),
						snippet: h.snippet,
						rank: Math.round(h.rank * 1000) / 1000
					};
					if (h.kind !== 'knowledge' || withBody >= BODIES) return base;
					withBody++;
					const note = await getKnowledge(sql(), h.id);
					if (!note) return base;
					const truncated = note.body.length > BODY_CHARS;
					return { ...base, body: truncated ? note.body.slice(0, BODY_CHARS) : note.body, ...(truncated ? { truncated } : {}) };
				})
			);
			return { results };
		}
	});
}
