// The knowledge base: pages, files and inventory notes, searchable.
import { sql } from 'drizzle-orm';
import { index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts, tsvector } from './columns';

export const knowledge = pgTable(
	'knowledge',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		title: text('title').notNull(),
		body: text('body').notNull().default(''),
		source: text('source', { enum: ['page', 'file', 'inventory'] })
			.notNull()
			.default('page'),
		sourcePath: text('source_path').unique(),
		search: tsvector('search')
			.notNull()
			.generatedAlwaysAs(sql`setweight(to_tsvector('english', coalesce("title", '')), 'A') || setweight(to_tsvector('english', coalesce("body", '')), 'B')`),
		createdAt: createdAt(),
		updatedAt: ts('updated_at').notNull().defaultNow()
	},
	(t) => [index('knowledge_search_idx').using('gin', t.search)]
);
