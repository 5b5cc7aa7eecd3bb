// What `npm run qualify` found for a model: one row a qualification (issue #49).
import { index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { verdicts, type QualificationFigures, type ScenarioResult } from '../../../schemas/qualification';
import { ts } from './columns';

/** A qualification of a model: its verdict, the suite's figures and each scenario's (never edited). */
export const qualifications = pgTable(
	'qualifications',
	{
		id: uuid('id').primaryKey().defaultRandom(),
		model: text('model').notNull(),
		baseUrl: text('base_url'),
		ranAt: ts('ran_at').notNull().defaultNow(),
		verdict: text('verdict', { enum: verdicts }).notNull(),
		/** runs of each scenario */
		runs: integer('runs').notNull(),
		figures: jsonb('figures').$type<QualificationFigures>().notNull(),
		scenarios: jsonb('scenarios').$type<ScenarioResult[]>().notNull()
	},
	(t) => [index('qualifications_model_idx').on(t.model, t.ranAt)]
);
