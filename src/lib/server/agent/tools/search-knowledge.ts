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
			"Search the homelab knowledge base (the operator's notes and imported Markdown files) and the inventory " +
			"entities' names and notes. Matching is by words (English stemming), ranked best first; quotes match a " +
			'phrase, -word excludes, "or" widens; a bare vmid like 101 also finds that guest. Snippets mark matches ' +
			'with «». The best note hits include their text (cut at ' +
			BODY_CHARS +
			' characters). Use it before asking the operator something the notes may already say.',
		inputSchema: z
			.object({
				query: z
					.string()
					.min(2)
					.max(200)
					.describe('Words to look for, e.g. "backup schedule", "caddy certificates" or "101"')
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
