import type { Sql } from '../index';
import type { qualifications } from '../schema';

export type QualificationRow = typeof qualifications.$inferSelect;
export type NewQualification = Omit<typeof qualifications.$inferInsert, 'id' | 'ranAt'>;

const COLUMNS = `id, model, base_url as "baseUrl", ran_at as "ranAt", verdict, runs, figures, scenarios`;

/** Stores one finished qualification (one statement: never a half-written row). */
export async function insertQualification(sql: Sql, q: NewQualification): Promise<QualificationRow> {
	const [row] = await sql<QualificationRow[]>`
		insert into qualifications (model, base_url, verdict, runs, figures, scenarios)
		values (${q.model}, ${q.baseUrl ?? null}, ${q.verdict}, ${q.runs}, ${JSON.stringify(q.figures)}::text::jsonb, ${JSON.stringify(q.scenarios)}::text::jsonb)
		returning ${sql.unsafe(COLUMNS)}`;
	return row;
}

/** The newest qualification of each of these models (a model never qualified is absent). */
export async function latestQualifications(sql: Sql, models: string[]): Promise<QualificationRow[]> {
	if (!models.length) return [];
	return sql<QualificationRow[]>`
		select distinct on (model) ${sql.unsafe(COLUMNS)} from qualifications
		where model in ${sql(models)} order by model, ran_at desc`;
}

export async function getQualification(sql: Sql, id: string): Promise<QualificationRow | null> {
	const [row] = await sql<QualificationRow[]>`select ${sql.unsafe(COLUMNS)} from qualifications where id = ${id}`;
	return row ?? null;
}
